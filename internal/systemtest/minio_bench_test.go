package systemtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/internal/testkit/benchdata"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
)

// benchSetup is one store set-up of a side-by-side benchmark: config
// returns the config file of one server (called once per server, so each
// gets its own schema and bucket).
type benchSetup struct {
	name   string
	config func() string
}

// BenchmarkVersusMinIO compares claimcheck with the S3 server it sits
// on: the same bytes put and read back through `claimcheck serve` and the
// Go client, and through MinIO and the AWS SDK's S3 client, on the same
// machine, interleaved round by round so both see the same load. Fresh
// bytes every round (no dedup, no cache). It reports ratio = MinIO's time
// / claimcheck's time: above 1, claimcheck is faster; ratio-p50 is the
// same from the median round of each, which load from outside moves less.
//
//   - json-1MiB: a compressible JSON document; claimcheck compresses it
//     with the default policy.
//   - random-1MiB: incompressible bytes.
//   - 64KiB-16w and 64KiB-64w: 64 KiB payloads, 16 and 64 concurrent
//     workers, one put + read each.
//
// "embedded" runs claimcheck on its defaults (SQLite and files);
// "postgres-minio" on PostgreSQL and the same MinIO, when
// TEST_DATABASE_URL is set too. MinIO comes from TEST_S3_URL
// (scripts/minio.sh start DIR; scripts/bench.sh starts it).
//
// CLAIMCHECK_BENCH_BASELINE lists claimcheck binaries built from other
// commits (separated like PATH). Each runs beside this tree's server in
// every setup, on its own data directory (and schema and bucket), in the
// same rounds: every round puts and reads through MinIO, this tree's
// server and then each of them, so a change's before and after see the
// same load. Their metrics are named after the
// binary's file: NAME-ms, ratio-NAME and ratio-p50-NAME. An entry
// BIN#SETTING runs BIN with the default compression SETTING (its metrics
// are named NAME-SETTING): "$bin#auto:$bin#none" with a build of this
// tree compares the settings with the default in the same rounds. On Linux,
// claimcheck-server-cpu-ms and NAME-server-cpu-ms are the CPU time of a
// round in the server process (counted in the kernel's 10 ms ticks: run
// enough rounds), and the -client-cpu-ms ones that of the Go client.
//
// In the PostgreSQL + MinIO setup two floors run in the same rounds
// (floor_bench_test.go): the storage calls and the fewest statements a
// claim needs, from this process, with (floor-intent) and without
// (floor-1commit) a row that owns the object before it is written. Every
// row of the setup also reports what PostgreSQL and MinIO spent per put
// + redeem pair (WHO-pg-cpu-us/pair, WHO-minio-cpu-us/pair: every process
// of that command name on the machine, so run nothing else) and
// PostgreSQL's writing transactions and WAL bytes per pair.
//
//	go test -run '^$' -bench VersusMinIO -benchtime 20x ./internal/systemtest
func BenchmarkVersusMinIO(b *testing.B) {
	_, s3c, bucket := testsvc.S3(b)
	bin := buildBinary(b)
	// Each setup's config is made once per server, so this tree's server
	// and every baseline get their own schema and bucket.
	setups := []benchSetup{{"embedded", func() string { return "" }}}
	if os.Getenv("TEST_DATABASE_URL") != "" {
		setups = append(setups, benchSetup{"postgres-minio", func() string {
			dsn, _ := testsvc.Postgres(b)
			storage, _, _ := testsvc.S3(b)
			return fmt.Sprintf("metadata: %q\nstorage: %q\n", dsn, storage)
		}})
	}
	serve := func(name, bin, config string) served { return serveBench(b, name, bin, config) }
	for _, setup := range setups {
		servers := []served{serve("", bin, setup.config())}
		for _, other := range filepath.SplitList(os.Getenv("CLAIMCHECK_BENCH_BASELINE")) {
			// BIN#SETTING: that binary with the default compression
			// SETTING (zstd, auto, none), to compare the settings.
			name, config := filepath.Base(other), setup.config()
			if path, alg, ok := strings.Cut(other, "#"); ok {
				other, name = path, filepath.Base(path)+"-"+alg
				config += fmt.Sprintf("defaults:\n  compression: %s\n", alg)
			}
			servers = append(servers, serve(name, other, config))
		}
		var floors []*putFloor
		if setup.name == "postgres-minio" {
			floors = newPutFloors(b, s3c, bucket)
			// This tree's server again with payloads of up to 64 KiB kept
			// in PostgreSQL (ADR 0292): the 64 KiB phases put inline, the
			// 1 MiB ones go to MinIO as before.
			servers = append(servers, serve("inline", bin, setup.config()+"defaults:\n  inline_below: 64KiB\n"))
		}
		for _, tc := range []struct {
			name    string
			size    int
			workers int
			json    bool
		}{
			{"json-1MiB", 1 << 20, 1, true},
			{"random-1MiB", 1 << 20, 1, false},
			{"64KiB-16w", 64 << 10, 16, false},
			{"64KiB-64w", 64 << 10, 64, false},
			{"4KiB-16w", 4 << 10, 16, false},
		} {
			b.Run(setup.name+"/"+tc.name, func(b *testing.B) {
				benchVersusMinIO(b, benchStack{servers, floorsFor(floors, tc.size), newStackMeter(b)}, s3c, bucket, tc.size, tc.workers, tc.json)
			})
		}
	}
}

// served is a running claimcheck server: this tree's (name "") or a
// baseline binary's.
type served struct {
	name string
	c    *client.Client
	pid  int
}

// serveBench starts bin's server on a data directory of its own, with
// config (YAML; empty: the defaults), and a Go client of it.
func serveBench(b *testing.B, name, bin, config string) served {
	dir := b.TempDir()
	args := []string{"--data", dir}
	if config != "" {
		cfg := filepath.Join(dir, "claimcheck.yaml")
		if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
			b.Fatal(err)
		}
		args = append(args, "--config", cfg)
	}
	u, pid := startServerProcess(b, bin, dir, args...)
	c, err := client.New(u)
	if err != nil {
		b.Fatal(err)
	}
	return served{name, c, pid}
}

// benchSeq numbers the payloads of every BenchmarkVersusMinIO run in the
// process, so that a run repeated with -count does not send the bytes of
// the previous one again (which would be dedup hits).
var benchSeq atomic.Uint64

// benchStack is what a benchmark of BenchmarkVersusMinIO compares with
// MinIO: the servers, the floors of the PostgreSQL + MinIO setup
// (floor_bench_test.go), and the meter of the stack under them.
type benchStack struct {
	servers []served
	floors  []*putFloor
	meter   *stackMeter
}

func benchVersusMinIO(b *testing.B, stack benchStack, s3c *s3.Client, bucket string, size, workers int, json bool) {
	servers := stack.servers
	ctx := context.Background()
	payloads := make([][]byte, workers)
	for i := range payloads {
		if json {
			payloads[i] = benchdata.JSONRecords(size)
		} else {
			payloads[i] = make([]byte, size)
			rand.Read(payloads[i])
		}
	}
	fresh := func(p []byte) []byte { // distinct bytes every round: no dedup
		p = bytes.Clone(p)
		binary.LittleEndian.PutUint64(p[len(p)-8:], benchSeq.Add(1))
		return p
	}
	viaMinIO := func(w int) error {
		p := fresh(payloads[w])
		key := fmt.Sprintf("bench/%d-%d", w, len(p))
		if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
			Body: bytes.NewReader(p), ContentLength: aws.Int64(int64(len(p)))}); err != nil {
			return err
		}
		out, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			return err
		}
		defer out.Body.Close()
		return readAll(out.Body, len(p))
	}
	// Each server's redeems, timed from the request to the last byte
	// read and verified: their p99 over the whole run.
	redeems := make([]latencies, len(servers))
	viaClaimcheck := func(i int) func(int) error {
		c := servers[i].c
		return func(w int) error {
			p := fresh(payloads[w])
			ref, err := c.Put(ctx, "bench", bytes.NewReader(p), claimcheck.PutOptions{})
			if err != nil {
				return err
			}
			start := time.Now()
			r, err := c.Redeem(ctx, ref)
			if err != nil {
				return err
			}
			defer r.Close()
			err = readAll(r, len(p))
			redeems[i].add(time.Since(start))
			return err
		}
	}
	round := func(op func(int) error) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, workers)
		for w := range workers {
			wg.Go(func() { errs[w] = op(w) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	var minio []time.Duration
	rounds := make([][]time.Duration, len(servers))
	// The CPU time of each claimcheck's rounds: its server process's and
	// this process's (the Go client's) while they ran. Client, server and
	// MinIO share the machine's cores, so CPU per round is what a
	// change saves under load, where the times move with everything
	// else running. The client's share is the same code for every
	// server, and the first server after MinIO's round also pays for
	// some of the garbage the AWS SDK left: compare servers by their
	// server CPU.
	srvCPU := make([]time.Duration, len(servers))
	cliCPU := make([]time.Duration, len(servers))
	cpuOK := true
	// What PostgreSQL and MinIO spent in each one's rounds.
	var minioUse stackUse
	srvUse := make([]stackUse, len(servers))
	floorUse := make([]stackUse, len(stack.floors))
	floorRounds := make([][]time.Duration, len(stack.floors))
	metered := func(use *stackUse, op func(int) error) time.Duration {
		r0 := stack.meter.read()
		d := round(op)
		use.add(r0, stack.meter.read())
		return d
	}
	for b.Loop() {
		minio = append(minio, metered(&minioUse, viaMinIO))
		for i, s := range servers {
			s0, ok0 := processCPU(s.pid)
			c0 := selfCPU()
			rounds[i] = append(rounds[i], metered(&srvUse[i], viaClaimcheck(i)))
			s1, ok1 := processCPU(s.pid)
			srvCPU[i] += s1 - s0
			cliCPU[i] += selfCPU() - c0
			cpuOK = cpuOK && ok0 && ok1
		}
		for i, f := range stack.floors {
			floorRounds[i] = append(floorRounds[i], metered(&floorUse[i], func(w int) error { return f.op(ctx, fresh(payloads[w])) }))
		}
	}
	sum := func(ds []time.Duration) (t time.Duration) {
		for _, d := range ds {
			t += d
		}
		return t
	}
	// The ratio from the median rounds too: a burst of load from outside
	// the benchmark moves the sums of a few rounds, not the medians.
	median := func(ds []time.Duration) time.Duration {
		ds = slices.Clone(ds)
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	ms := func(ds []time.Duration) float64 { return sum(ds).Seconds() * 1000 / float64(len(ds)) }
	b.ReportMetric(ms(minio), "minio-ms")
	pairs := len(minio) * workers
	minioUse.report(b, "minio", pairs)
	for i, f := range stack.floors {
		b.ReportMetric(ms(floorRounds[i]), f.name+"-ms")
		b.ReportMetric(sum(minio).Seconds()/sum(floorRounds[i]).Seconds(), "ratio-"+f.name)
		floorUse[i].report(b, f.name, pairs)
	}
	for i, s := range servers {
		name, suffix := "claimcheck", ""
		if s.name != "" {
			name, suffix = s.name, "-"+s.name
		}
		b.ReportMetric(ms(rounds[i]), name+"-ms")
		b.ReportMetric(redeems[i].p99().Seconds()*1000, name+"-redeem-p99-ms")
		if cpuOK {
			b.ReportMetric(srvCPU[i].Seconds()*1000/float64(len(rounds[i])), name+"-server-cpu-ms")
			b.ReportMetric(cliCPU[i].Seconds()*1000/float64(len(rounds[i])), name+"-client-cpu-ms")
		}
		srvUse[i].report(b, name, pairs)
		b.ReportMetric(sum(minio).Seconds()/sum(rounds[i]).Seconds(), "ratio"+suffix)
		b.ReportMetric(median(minio).Seconds()/median(rounds[i]).Seconds(), "ratio-p50"+suffix)
	}
}

// readAll reads r to its end and checks that it held n bytes.
func readAll(r io.Reader, n int) error {
	got, err := io.Copy(io.Discard, r)
	if err == nil && got != int64(n) {
		err = fmt.Errorf("read %d bytes, want %d", got, n)
	}
	return err
}

// latencies collects durations from concurrent workers.
type latencies struct {
	mu sync.Mutex
	ds []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.ds = append(l.ds, d)
	l.mu.Unlock()
}

// p99 is the 99th percentile of the durations (0 without any).
func (l *latencies) p99() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, p99 := quantiles(slices.Clone(l.ds))
	return p99
}
