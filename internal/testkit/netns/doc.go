// Package netns builds small networks of Linux network namespaces for
// tests that cut links between processes: a bridge in a namespace of its
// own, and node namespaces joined to it by veth pairs, each with one
// 10.x address. Every address exists only inside the namespaces a
// Network creates, and New removes them when the test ends (t.Cleanup,
// after the test's own cleanups have stopped the processes it started in
// them); names carry the process id, so a leftover of another run never
// collides.
//
// A test runs a program in a node with Node.Command (`ip netns exec`),
// reaches it from the test process through Node.DialContext (the socket
// is made inside the node's namespace), takes a node off the bridge with
// Isolate and Rejoin (its veth down and up), and cuts the path between
// two nodes only with Cut and Heal (a blackhole route each way: packets
// are dropped, no reset is sent, a connection stalls as on a real
// partition).
//
// It needs root and the ip command; New skips the test, saying why,
// where they are missing.
package netns
