module github.com/claimcheck/claimcheck/integrations/temporal

go 1.26.8

require github.com/claimcheck/claimcheck v0.0.0

require (
	go.temporal.io/api v1.63.5 // indirect
	go.temporal.io/sdk v1.50.0 // indirect
	go.temporal.io/server v1.32.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace github.com/claimcheck/claimcheck => ../..
