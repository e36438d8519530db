package cli

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"

	"github.com/spf13/cobra"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/server"
)

// httpConfig is the config file's http section: the server's limits
// (server.Limits, inline) and its TLS files.
//
//	http:
//	  tls: { cert_file: /etc/claimcheck/tls.crt, key_file: /etc/claimcheck/tls.key }
//	  rate_limit: 100        # requests/s per API key (per address without auth: off unless set); -1: off
//	  max_streams_per_key: 32
//	  public_url: https://claims.example.com   # behind a reverse proxy
type httpConfig struct {
	server.Limits `yaml:",inline"`
	TLS           tlsFiles `yaml:"tls"`
}

// tlsFiles name a PEM certificate (chain) and its private key.
type tlsFiles struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// load returns the effective limits of a server with auth on or off and
// the TLS config (nil: plain HTTP).
func (h httpConfig) load(authOn bool) (server.Limits, *tls.Config, error) {
	limits := h.Limits.WithAuthDefaults(authOn)
	if err := limits.Validate(); err != nil {
		return limits, nil, fmt.Errorf("http: %w", err)
	}
	if (h.TLS.CertFile == "") != (h.TLS.KeyFile == "") {
		return limits, nil, fmt.Errorf("%w: http.tls: set both cert_file and key_file, or neither", claimcheck.ErrInvalidArgument)
	}
	if h.TLS.CertFile == "" {
		return limits, nil, nil
	}
	cert, err := tls.LoadX509KeyPair(h.TLS.CertFile, h.TLS.KeyFile)
	if err != nil {
		return limits, nil, fmt.Errorf("http.tls: loading cert_file %s and key_file %s: %w", h.TLS.CertFile, h.TLS.KeyFile, err)
	}
	return limits, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// httpFlags are serve's flags for auth and TLS; they win over the file.
type httpFlags struct {
	auth    bool
	tlsCert string
	tlsKey  string
}

func (f *httpFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.auth, "auth", false, "require API keys on every /v1 route (config: auth: true); create keys with: claimcheck keys create")
	cmd.Flags().StringVar(&f.tlsCert, "tls-cert", "", "serve HTTPS with this PEM certificate (config: http.tls.cert_file)")
	cmd.Flags().StringVar(&f.tlsKey, "tls-key", "", "the certificate's PEM private key (config: http.tls.key_file)")
}

func (f *httpFlags) apply(fc *fileConfig) {
	if f.auth {
		fc.Auth = true
	}
	if f.tlsCert != "" {
		fc.HTTP.TLS.CertFile = f.tlsCert
	}
	if f.tlsKey != "" {
		fc.HTTP.TLS.KeyFile = f.tlsKey
	}
}

// secureServer switches auth on in cfg when on is set. With auth off it
// warns loudly, on stderr and in the log, if addr is reachable from
// other machines: every claim would be open to anyone who can connect;
// and it says when requests are not rate limited (ADR 0262).
func secureServer(ctx context.Context, cfg *server.Config, store *engine.Store, on bool, addr net.Addr, stderr io.Writer, logger *slog.Logger) error {
	if !on {
		if cfg.Limits.RateLimit == 0 {
			logger.Info("no per-address request rate limit while auth is off: one producer host (or a NAT) carries many clients; set http.rate_limit to limit each client address")
		}
		if !loopback(addr) {
			fmt.Fprintf(stderr, "\n"+
				"WARNING: authentication is OFF and claimcheck is listening on %s.\n"+
				"WARNING: anyone who can reach this address can read, write and delete every claim.\n"+
				"WARNING: set \"auth: true\" in the config (or serve --auth) and create keys with `claimcheck keys create`,\n"+
				"WARNING: or listen on 127.0.0.1 only.\n\n", addr)
			logger.Warn("authentication is off on a non-loopback address: every claim is open to anyone who can connect", "listen", addr.String())
		}
		return nil
	}
	svc := auth.New(store.APIKeyStore(), nil)
	keys, err := svc.List(ctx, "")
	if err != nil {
		return err
	}
	live := 0
	for _, k := range keys {
		if k.RevokedAt.IsZero() {
			live++
		}
	}
	if live == 0 {
		logger.Warn("auth is on but no API key exists yet: every request will be refused; create one with `claimcheck keys create --tenant default --role admin`")
	}
	cfg.Auth = svc
	cfg.ClaimNamespace = store.ClaimNamespace
	return nil
}

// loopback reports whether addr only accepts connections from this
// machine. The unspecified address (0.0.0.0, ::) accepts them from
// everywhere.
func loopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
