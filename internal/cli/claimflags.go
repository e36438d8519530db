package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// claimFlags are the flags of the commands that create a claim (put and
// upload): where it goes and what is stored with it.
type claimFlags struct {
	ns            string
	contentType   string
	consumers     int
	consumerNames []string
	labels        []string
}

func (f *claimFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.ns, "ns", "", "namespace to store in (required)")
	cmd.Flags().StringVar(&f.contentType, "content-type", "", "content type stored with the claim")
	cmd.Flags().IntVar(&f.consumers, "consumers", 0, "releases needed to finish the claim (fan-out)")
	cmd.Flags().StringSliceVar(&f.consumerNames, "consumer-names", nil, "names of the consumers whose releases count (comma-separated)")
	cmd.Flags().StringArrayVar(&f.labels, "label", nil, "label KEY=VALUE stored with the claim (repeatable)")
}

// check validates the flags and returns the labels as a map (nil when
// none are given).
func (f *claimFlags) check() (map[string]string, error) {
	if f.ns == "" {
		return nil, usageError{errors.New("--ns is required: the namespace to store the payload in")}
	}
	var labels map[string]string
	for _, l := range f.labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return nil, usageError{fmt.Errorf("--label %q: want KEY=VALUE", l)}
		}
		if labels == nil {
			labels = map[string]string{}
		}
		labels[k] = v
	}
	return labels, nil
}
