// Command goaws runs the goaws SQS and SNS emulator for the tests, bound
// to 127.0.0.1 (goaws's own command listens on every interface), whose
// queue URLs name the address it listens on.
//
//	goaws -config goaws.yaml -listen 127.0.0.1:PORT
//
// It is built by scripts/goaws.sh from this module, whose go.sum pins
// goaws and its dependencies.
package main

import (
	"flag"
	"log"
	"net/http"
	"time"

	"github.com/Admiral-Piett/goaws/app/conf"
	"github.com/Admiral-Piett/goaws/app/gosqs"
	"github.com/Admiral-Piett/goaws/app/models"
	"github.com/Admiral-Piett/goaws/app/router"
	"github.com/sirupsen/logrus"
)

func main() {
	config := flag.String("config", "", "goaws config file (its Local environment is used)")
	listen := flag.String("listen", "127.0.0.1:4100", "address to listen on")
	flag.Parse()
	logrus.SetLevel(logrus.WarnLevel)
	conf.LoadYamlConfig(*config, "Local")
	// goaws names a queue http://REGION.HOST:PORT/ACCOUNT/NAME when a
	// region is set, a host no resolver knows; an SDK that sends a queue's
	// requests to its URL (the AWS SDK for JavaScript does) cannot reach
	// it. Without a region the URL is http://HOST:PORT/ACCOUNT/NAME, this
	// server. ARNs then have an empty region field ("arn:aws:sqs::ACCOUNT:
	// NAME"), as those of global services do; goaws matches queues and
	// topics by the ARN's last field, so subscriptions work either way.
	models.CurrentEnvironment.Region = ""
	quit := make(chan bool)
	// Visibility timeouts and delays are applied by this loop.
	go gosqs.PeriodicTasks(time.Second, quit)
	srv := &http.Server{Addr: *listen, Handler: router.New(), ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
