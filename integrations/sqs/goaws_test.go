package sqs

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
)

// TestGoawsQueueURL: the emulator scripts/goaws.sh starts names its
// queues by the address it listens on, so that an SDK that sends a
// queue's requests to its QueueUrl (as the AWS SDK for JavaScript does)
// reaches it: CreateQueue, GetQueueUrl and ListQueues give a URL whose
// host is TEST_SQS_ENDPOINT's, and a plain JSON-protocol SendMessage
// posted to that URL delivers the message.
func TestGoawsQueueURL(t *testing.T) {
	t.Parallel()
	e := setup(t)
	endpoint, err := url.Parse(os.Getenv("TEST_SQS_ENDPOINT"))
	if err != nil {
		t.Fatal(err)
	}
	queueURL := e.queue(t, "queueurl", nil)
	u, err := url.Parse(queueURL)
	if err != nil {
		t.Fatal(err)
	}
	if u.Host != endpoint.Host {
		t.Fatalf("QueueUrl %s: host %q, want %q (the server's address)", queueURL, u.Host, endpoint.Host)
	}
	got, err := e.sqs.GetQueueUrl(e.ctx, &awssqs.GetQueueUrlInput{QueueName: aws.String(queueName(queueURL))})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(got.QueueUrl) != queueURL {
		t.Fatalf("GetQueueUrl: %s, want %s", aws.ToString(got.QueueUrl), queueURL)
	}
	list, err := e.sqs.ListQueues(e.ctx, &awssqs.ListQueuesInput{QueueNamePrefix: aws.String(queueName(queueURL))})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.QueueUrls) != 1 || list.QueueUrls[0] != queueURL {
		t.Fatalf("ListQueues: %v, want [%s]", list.QueueUrls, queueURL)
	}

	// A request as another SDK makes it: to the queue's URL itself.
	body, err := json.Marshal(map[string]string{"QueueUrl": queueURL, "MessageBody": "sent to the queue URL"})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(e.ctx, http.MethodPost, queueURL, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS.SendMessage")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST to the QueueUrl %s: %v", queueURL, err)
	}
	_ = resp.Body.Close() // the status is the answer
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST to the QueueUrl %s: %s", queueURL, resp.Status)
	}
	if m := e.receive(t, queueURL, 30); aws.ToString(m.Body) != "sent to the queue URL" {
		t.Fatalf("received %q", aws.ToString(m.Body))
	}
}
