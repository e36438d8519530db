package client_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"os"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/server"
)

// A client that has the bytes itself uploads them directly: init declares
// the size and sha256 and reserves quota, the bytes go to the URL the
// server answers (S3 with a presigned URL; here, file storage, the server
// itself), and confirm turns the upload into a claim.
func ExampleClient_InitUpload() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "claimcheck-example")
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	store, err := engine.Open(ctx, engine.Config{Data: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	srv := httptest.NewServer(server.New(server.Config{Claims: store}))
	defer srv.Close()
	c, err := client.New(srv.URL)
	if err != nil {
		log.Fatal(err)
	}

	photo := bytes.Repeat([]byte("pixels"), 10000)
	up, err := c.InitUpload(ctx, "photos", claimcheck.UploadRequest{
		Size: int64(len(photo)), Digest: claimcheck.DigestOf(photo), ContentType: "image/png",
		IdempotencyKey: "album-7/photo-1", // a retried init continues the same upload
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := c.SendUpload(ctx, up, bytes.NewReader(photo)); err != nil {
		log.Fatal(err)
	}
	ref, err := c.ConfirmUpload(ctx, up.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(up.State, ref.ID == up.ID, ref.Size, ref.Compression)
	// Output:
	// pending true 60000 none
}
