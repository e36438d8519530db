package client_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"os"

	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/server"
)

// A large file on an unreliable network goes over tus: in chunks, each
// checked by the server, continued from the server's offset after a cut
// connection. Keep the URL given to Created to finish the upload with
// ResumeUpload from another process.
func ExampleClient_UploadResumable() {
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

	video := bytes.Repeat([]byte("frame"), 1<<20) // 5 MiB; in real life an *os.File
	var uploadURL string
	ref, err := c.UploadResumable(ctx, "media", bytes.NewReader(video), int64(len(video)), client.ResumableOptions{
		ContentType: "video/mp4",
		ChunkSize:   1 << 20,
		Created:     func(u string) error { uploadURL = u; return nil }, // save it to resume after a crash
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ref.Size, ref.Namespace, uploadURL != "")
	// Output:
	// 5242880 media true
}
