// Command claimcheck-temporal-adopt hands the objects Temporal's stock
// storage drivers (aws.s3driver, gcp.gcsdriver) wrote to claimcheck: each
// object whose key names a workflow becomes a claim labelled with that
// workflow's run, so the keeper ends it at run close plus retention. It is
// a dry run unless --apply is given: the dry run lists what it would do
// and changes nothing. Objects whose bytes fail the sha256 in their key
// are never adopted. Running it again adopts nothing twice. See ADR 0280
// and integrations/temporal/README.md.
//
//	claimcheck-temporal-adopt --server http://127.0.0.1:8080 --ns temporal \
//	    --source 's3://payloads?region=us-east-1'            # dry run
//	claimcheck-temporal-adopt ... --apply                    # for real
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"path"
	"sort"
	"strings"
	"syscall"

	"github.com/claimcheck/claimcheck/client"
	cctemporal "github.com/claimcheck/claimcheck/integrations/temporal"
	"github.com/claimcheck/claimcheck/integrations/temporal/foreignbucket"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "claimcheck-temporal-adopt:", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// errRefused makes the exit status say that some objects were not adopted.
var errRefused = errors.New("some objects were refused (listed above)")

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("claimcheck-temporal-adopt", flag.ContinueOnError)
	serverURL := fs.String("server", envOr("CLAIMCHECK_SERVER", "http://127.0.0.1:8080"), "claimcheck server URL (default $CLAIMCHECK_SERVER)")
	apiKey := fs.String("api-key", os.Getenv("CLAIMCHECK_API_KEY"), "producer or admin API key of the namespace's tenant (default $CLAIMCHECK_API_KEY)")
	ns := fs.String("ns", cctemporal.DefaultNamespace, "claimcheck namespace the claims go to (the keeper's)")
	source := fs.String("source", "", "storage URL of the driver's bucket: s3://bucket?region=…, gs://bucket, azblob://container (required)")
	bucket := fs.String("bucket", "", "the bucket's name as the references write it (default: the --source URL's host; a file:// directory's name)")
	prefix := fs.String("prefix", "v0/", "only keys under this prefix (e.g. v0/ns/<namespace>/)")
	apply := fs.Bool("apply", false, "adopt for real; without it, a dry run that changes nothing")
	keep := fs.Bool("keep-source", false, "leave the objects in the bucket after adopting them")
	quiet := fs.Bool("quiet", false, "print the summary only")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *source == "" {
		return fmt.Errorf("--source is required")
	}
	if *bucket == "" {
		name, err := bucketOf(*source)
		if err != nil {
			return err
		}
		*bucket = name
	}
	var opts []client.Option
	if *apiKey != "" {
		opts = append(opts, client.WithAPIKey(*apiKey))
	}
	cl, err := client.New(*serverURL, opts...)
	if err != nil {
		return fmt.Errorf("--server %s: %w", *serverURL, err)
	}
	objs, err := foreignbucket.Open(ctx, *source)
	if err != nil {
		return fmt.Errorf("--source: %w", err)
	}
	defer func() { _ = objs.Close() }()
	each := func(o cctemporal.AdoptedObject) {
		if *quiet && o.Err == nil {
			return
		}
		line := fmt.Sprintf("%-16s %s", o.Outcome, o.Key)
		if o.Claim != "" {
			line += " claim=" + o.Claim
		}
		if o.SourceDeleted {
			line += " source=deleted"
		}
		if o.Err != nil {
			line += " error=" + o.Err.Error()
		}
		// A line that cannot be written changes nothing adopted; the
		// summary's write error is returned.
		_, _ = fmt.Fprintln(out, line)
	}
	rep, err := cctemporal.Adopt(ctx, cl, cctemporal.AdoptOptions{
		Bucket: *bucket, Objects: objs, Namespace: *ns, Prefix: *prefix,
		DryRun: !*apply, KeepSource: *keep, Each: each,
	})
	if _, werr := io.WriteString(out, summary(rep)); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	if len(rep.Refusals) > 0 {
		return errRefused
	}
	return nil
}

// bucketOf is the bucket a storage URL names: its host, or for a
// directory (file://) its last element.
func bucketOf(source string) (string, error) {
	u, err := url.Parse(source)
	switch {
	case err != nil:
	case u.Host != "":
		return u.Host, nil
	case u.Scheme == "file" && path.Base(u.Path) != "/" && path.Base(u.Path) != ".":
		return path.Base(u.Path), nil
	}
	return "", fmt.Errorf("--source %q: want a storage URL naming the bucket (s3://bucket?…), or give --bucket", source)
}

// summary is the last line: the mode and the count of each outcome.
func summary(rep cctemporal.AdoptReport) string {
	mode := "applied"
	if rep.DryRun {
		mode = "dry run (nothing changed; --apply to adopt)"
	}
	outcomes := make([]string, 0, len(rep.Counts))
	for o := range rep.Counts {
		outcomes = append(outcomes, string(o))
	}
	sort.Strings(outcomes)
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d objects listed", mode, rep.Listed)
	for _, o := range outcomes {
		fmt.Fprintf(&b, ", %s %d", o, rep.Counts[cctemporal.AdoptOutcome(o)])
	}
	fmt.Fprintf(&b, ", sources deleted %d\n", rep.Deleted)
	return b.String()
}
