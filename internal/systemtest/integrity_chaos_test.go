package systemtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/claimcheck/claimcheck"
)

// TestIntegrityDamageChaos: a bounded concurrent load of puts of a small
// set of payloads and redeems (the Go client whole and ranged, the CLI,
// curl whole and ranged, the Python client whole and ranged, the
// JavaScript client whole)
// runs while objects are flipped, truncated and deleted at random
// underneath the server, on SQLite + files and on PostgreSQL + MinIO,
// where objects are also made to answer 500 (their xl.meta cut, when
// TEST_S3_DATA_DIR names MinIO's data directory; ADR 0255).
// Checked: no redeem of a whole payload ever ends successfully with
// wrong bytes; one fsck --verify names every injected damage that no
// put has repaired; after one more put of each payload every claim that
// was acknowledged redeems byte-exactly. The counts are logged
// (docs/OPERATIONS.md, "Damage chaos"). Short: a few seconds;
// CLAIMCHECK_TEST_CHAOS_OPS=N for a longer run (operations per worker).
func TestIntegrityDamageChaos(t *testing.T) {
	t.Parallel()
	ops := 40
	if v := os.Getenv("CLAIMCHECK_TEST_CHAOS_OPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CLAIMCHECK_TEST_CHAOS_OPS=%q: want a positive number", v)
		}
		ops = n
	}
	t.Run("files", func(t *testing.T) {
		t.Parallel()
		damageChaos(t, startDamageStore(t, false, integrityConfig), ops)
	})
	t.Run("minio", func(t *testing.T) {
		t.Parallel()
		damageChaos(t, startDamageStore(t, true, integrityConfig), ops)
	})
}

func damageChaos(t *testing.T, d *damageStore, ops int) {
	ctx := context.Background()
	type payload struct {
		ns   string
		data []byte
	}
	var payloads []payload
	for i := range 6 {
		if i%2 == 0 {
			payloads = append(payloads, payload{"plain", randomPayload(t, 80<<10+i)})
		} else {
			payloads = append(payloads, payload{"zipped", append(photosJSON(90<<10), byte(i))})
		}
	}
	var (
		mu       sync.Mutex
		acked    = map[string]int{} // claim id → payload index
		refs     []claimcheck.Ref
		injected = map[string]string{} // blob id → object key damaged
	)
	pick := func(r *rand.Rand) (claimcheck.Ref, int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if len(refs) == 0 {
			return claimcheck.Ref{}, 0, false
		}
		ref := refs[r.IntN(len(refs))]
		return ref, acked[ref.ID], true
	}
	wrong := func(format string, args ...any) { t.Errorf(format, args...) }
	tmp := t.TempDir()
	others := newOtherClients(t)

	// Counts for docs/OPERATIONS.md.
	var (
		kinds                             = map[string]int{}
		redeems, rangedWrong, rangedReads int
		byClient                          = map[string]int{}
	)
	countClient := func(name string) {
		mu.Lock()
		byClient[name]++
		mu.Unlock()
	}
	count := func(p *int) {
		mu.Lock()
		*p++
		mu.Unlock()
	}
	// checkRange judges a ranged answer that ended successfully: wrong
	// bytes are counted, and fail the test outside plain objects, whose
	// ranges are verified by count only (docs/HTTP.md).
	checkRange := func(who, id string, k int, got, want []byte) {
		if bytes.Equal(got, want) {
			return
		}
		// Every object of this run is new, so every plain one has a
		// block table (ADR 0257): a wrong range in any namespace fails.
		count(&rangedWrong)
		wrong("%s range of %s (namespace %s) ended successfully with wrong bytes", who, id, payloads[k].ns)
	}

	// damage flips, truncates or deletes the object of a random
	// acknowledged claim, or makes it answer 500, underneath the server.
	damage := func(r *rand.Rand) {
		ref, _, ok := pick(r)
		if !ok {
			return
		}
		c, err := d.m.Claim(ctx, ref.ID)
		if err != nil {
			return
		}
		b, err := d.m.Blob(ctx, c.BlobID)
		if err != nil || b.Damaged() {
			return
		}
		how, err := d.damageAt(r, b.Key)
		if err == nil {
			mu.Lock()
			injected[b.ID] = b.Key
			kinds[how]++
			mu.Unlock()
		}
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range ops {
				switch op := r.IntN(14); {
				case op >= 11: // Go client ranged, Python whole or ranged, JavaScript whole
					ref, k, ok := pick(r)
					if !ok {
						continue
					}
					data := payloads[k].data
					from := r.IntN(len(data) - 1)
					n := 1 + r.IntN(len(data)-from)
					out := filepath.Join(tmp, fmt.Sprintf("client-%d-%d", w, i))
					var err error
					switch {
					case op == 11:
						countClient("go ranged")
						count(&rangedReads)
						var got []byte
						got, err = redeemRangeBytes(d.c, ref, int64(from), int64(n))
						if err == nil {
							checkRange("Go client", ref.ID, k, got, data[from:from+n])
						}
					case op == 12 && others.py != nil:
						if r.IntN(2) == 0 {
							countClient("python")
							count(&redeems)
							if err = others.redeemPython(d.url, ref.ID, 0, -1, out); err == nil {
								if got, _ := os.ReadFile(out); !bytes.Equal(got, data) {
									wrong("Python client redeem of %s ended successfully with wrong bytes", ref.ID)
								}
							}
						} else {
							countClient("python ranged")
							count(&rangedReads)
							if err = others.redeemPython(d.url, ref.ID, from, n, out); err == nil {
								got, _ := os.ReadFile(out)
								checkRange("Python client", ref.ID, k, got, data[from:from+n])
							}
						}
					case op == 13 && others.js != nil:
						countClient("js")
						count(&redeems)
						if err = others.redeemJS(d.url, ref.ID, out); err == nil {
							if got, _ := os.ReadFile(out); !bytes.Equal(got, data) {
								wrong("JavaScript client redeem of %s ended successfully with wrong bytes", ref.ID)
							}
						}
					}
					if err != nil && !errors.Is(err, claimcheck.ErrChecksumMismatch) && !errors.Is(err, errMismatch) {
						wrong("redeem of %s: %v, want success or checksum mismatch", ref.ID, err)
					}
				case op == 10: // damage an object
					damage(r)
				case op < 4: // put, streamed or digest-first
					k := r.IntN(len(payloads))
					p := payloads[k]
					var body = bytes.NewReader(p.data)
					var ref claimcheck.Ref
					var err error
					if op < 2 {
						ref, err = d.c.Put(ctx, p.ns, body, claimcheck.PutOptions{})
					} else {
						ref, err = d.c.Put(ctx, p.ns, struct{ *bytes.Reader }{body}, claimcheck.PutOptions{})
					}
					if err != nil {
						wrong("put of payload %d failed: %v", k, err)
						continue
					}
					mu.Lock()
					acked[ref.ID] = k
					refs = append(refs, ref)
					mu.Unlock()
				case op < 8: // Go client redeem
					ref, k, ok := pick(r)
					if !ok {
						continue
					}
					count(&redeems)
					got, err := redeemBytes(d.c, ref)
					if err == nil && !bytes.Equal(got, payloads[k].data) {
						wrong("Go client redeem of %s succeeded with wrong bytes", ref.ID)
					}
					if err != nil && !errors.Is(err, claimcheck.ErrChecksumMismatch) {
						wrong("Go client redeem of %s: %v, want success or checksum mismatch", ref.ID, err)
					}
				case op == 8: // curl, which reads no trailer, whole or ranged
					ref, k, ok := pick(r)
					if !ok {
						continue
					}
					count(&redeems)
					out := filepath.Join(tmp, fmt.Sprintf("curl-%d-%d", w, i))
					if r.IntN(2) == 0 {
						if err := exec.Command("curl", "-sSf", "-o", out, d.url+"/v1/claims/"+ref.ID).Run(); err == nil {
							if got, _ := os.ReadFile(out); !bytes.Equal(got, payloads[k].data) {
								wrong("curl redeem of %s ended successfully with wrong bytes", ref.ID)
							}
						}
						continue
					}
					// A range: verified in every storage form (frames,
					// segments, and the block table of a plain object,
					// ADR 0257; every object here is new), so a wrong
					// ranged answer fails the test.
					data := payloads[k].data
					from := r.IntN(len(data) - 1)
					to := from + r.IntN(len(data)-from)
					count(&rangedReads)
					if err := exec.Command("curl", "-sSf", "-r", fmt.Sprintf("%d-%d", from, to), "-o", out, d.url+"/v1/claims/"+ref.ID).Run(); err == nil {
						got, _ := os.ReadFile(out)
						checkRange("curl", ref.ID, k, got, data[from:to+1])
					}
				default: // CLI
					ref, k, ok := pick(r)
					if !ok {
						continue
					}
					count(&redeems)
					out := filepath.Join(tmp, fmt.Sprintf("cli-%d-%d", w, i))
					cmd := exec.Command(d.bin, "get", "--server="+d.url, ref.ID, "-o", out)
					err := cmd.Run()
					if err == nil {
						if got, _ := os.ReadFile(out); !bytes.Equal(got, payloads[k].data) {
							wrong("claimcheck get of %s ended successfully with wrong bytes", ref.ID)
						}
					} else if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 5 {
						wrong("claimcheck get of %s: %v, want exit 0 or 5", ref.ID, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	// One scrub finds every injected damage that is still there: each
	// injected blob that still owns the damaged object is marked.
	run(t, d.bin, nil, append([]string{"fsck", "--verify", "--rate", "1000000000"}, d.store...)...)
	unnamed := 0
	for id, key := range injected {
		b, err := d.m.Blob(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if b.Key == key && (b.State == "committed" || b.State == "orphaned") && !b.Damaged() {
			unnamed++
			t.Errorf("blob %s: object %s was damaged, fsck --verify did not mark it", id, key)
		}
	}
	// Every acknowledged claim: right bytes or a typed error, never
	// wrong bytes; then, after one more put of each payload, right bytes.
	for _, ref := range refs {
		got, err := redeemBytes(d.c, ref)
		if err == nil && !bytes.Equal(got, payloads[acked[ref.ID]].data) {
			t.Errorf("redeem of %s after the scrub: wrong bytes", ref.ID)
		} else if err != nil && !errors.Is(err, claimcheck.ErrChecksumMismatch) {
			t.Errorf("redeem of %s after the scrub: %v, want success or checksum mismatch", ref.ID, err)
		}
	}
	for _, p := range payloads {
		streamPut(t, d.c, p.ns, p.data)
	}
	damages := 0
	for _, n := range kinds {
		damages += n
	}
	lost := 0
	for _, ref := range refs {
		if got, err := redeemBytes(d.c, ref); err != nil || !bytes.Equal(got, payloads[acked[ref.ID]].data) {
			lost++
			t.Errorf("redeem of %s after the repairing puts: %d bytes, %v", ref.ID, len(got), err)
		}
	}
	t.Logf("damage chaos: %d claims acknowledged, %d redeems (Go client, CLI, curl whole and ranged; Go ranged, Python and JavaScript clients %v), %d damages of %d blobs %v; "+
		"whole redeems with wrong bytes accepted: 0 (any fails the test); acknowledged puts not redeeming after one repair round: %d; "+
		"damaged objects not named by one fsck --verify: %d; ranged reads %d, wrong ranged answers %d (any fails the test)",
		len(refs), redeems, byClient, damages, len(injected), kinds, lost, unnamed, rangedReads, rangedWrong)
}
