package storedform_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/claimcheck/claimcheck/internal/storedform"
)

// seal encrypts data under k as the object at key, with tink's own
// streaming writer.
func seal(t *testing.T, k *storedform.Key, key string, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := k.Encrypt(&buf, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// DecryptRange computes the segment layout that tink's writer makes:
// every range of objects written by Key.Encrypt reads back as the same
// bytes of the plaintext, and the whole object decrypts with Key.Decrypt.
func TestDecryptRangeMatchesTheWriter(t *testing.T) {
	ctx := context.Background()
	k := testKey(t)
	const first, later = storedform.SegmentSize - 40 - 16, storedform.SegmentSize - 16
	for _, size := range []int{1, 100, first - 1, first, first + 1, first + later, first + later + 1, 3*later + 17, 300_000} {
		data := payload(size)
		key := fmt.Sprintf("ns/b%d.dk_test", size)
		objs := objects{key: seal(t, k, key, data)}
		obj := storedform.Object{Key: key, Stored: int64(len(objs[key])), Size: int64(size)}
		whole, err := k.Decrypt(bytes.NewReader(objs[key]), key)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if _, err := got.ReadFrom(whole); err != nil || !bytes.Equal(got.Bytes(), data) {
			t.Fatalf("%d bytes: whole decryption: %v", size, err)
		}
		for _, r := range ranges(int64(size)) {
			got, err := readAll(storedform.DecryptRange(ctx, objs, k, obj, r[0], r[1]))
			if err != nil || !bytes.Equal(got, data[r[0]:r[0]+r[1]]) {
				t.Fatalf("%d bytes, range %v: %d bytes, %v", size, r, len(got), err)
			}
		}
	}
}

// A segment altered, moved or cut, an object stored under another key
// or of another size than recorded: ErrSegment, never bytes.
func TestDecryptRangeRefusesWhatWasNotWritten(t *testing.T) {
	ctx := context.Background()
	k := testKey(t)
	const seg = storedform.SegmentSize
	data := payload(3*seg + 1000)
	const key = "ns/b.dk_test"
	sealed := seal(t, k, key, data)
	tamper := map[string]func([]byte) []byte{
		"flipped byte": func(b []byte) []byte { b[seg+100] ^= 1; return b },
		"truncated":    func(b []byte) []byte { return b[:len(b)-10] },
		"segments swapped": func(b []byte) []byte {
			out := append([]byte(nil), b[:seg]...)
			out = append(out, b[2*seg:3*seg]...)
			out = append(out, b[seg:2*seg]...)
			return append(out, b[3*seg:]...)
		},
	}
	for name, fn := range tamper {
		objs := objects{key: fn(bytes.Clone(sealed))}
		obj := storedform.Object{Key: key, Stored: int64(len(objs[key])), Size: int64(len(data))}
		got, err := readAll(storedform.DecryptRange(ctx, objs, k, obj, seg, seg))
		if !errors.Is(err, storedform.ErrSegment) {
			t.Errorf("%s: %d bytes, %v; want ErrSegment", name, len(got), err)
		}
	}
	// The same bytes stored under another key.
	objs := objects{"ns/other.dk_test": sealed}
	obj := storedform.Object{Key: "ns/other.dk_test", Stored: int64(len(sealed)), Size: int64(len(data))}
	if _, err := readAll(storedform.DecryptRange(ctx, objs, k, obj, 0, 10)); !errors.Is(err, storedform.ErrSegment) {
		t.Errorf("moved object: %v; want ErrSegment", err)
	}
	// A recorded size the object does not hold.
	objs = objects{key: sealed}
	obj = storedform.Object{Key: key, Stored: int64(len(sealed)), Size: int64(len(data)) + 1}
	if _, err := readAll(storedform.DecryptRange(ctx, objs, k, obj, 0, 10)); !errors.Is(err, storedform.ErrSegment) {
		t.Errorf("size not as recorded: %v; want ErrSegment", err)
	}
}
