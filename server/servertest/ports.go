package servertest

// FreePorts returns n distinct ports on 127.0.0.1 that were free for both
// TCP and UDP a moment ago, for tests that start servers and stubs with
// addresses of their own (configuration files, containers on the host's
// network). Another process may take one before the test binds it; the
// test then fails at start, naming the address.
func FreePorts(n int) ([]int, error) { return freePorts(n) }
