package policy

import "sync"

// Cache keeps the compiled script of the latest load, so that each
// server compiles a load once. It is safe for concurrent use.
type Cache struct {
	mu    sync.Mutex // guards index, prog, err
	index uint64
	prog  *Program
	err   error
}

// Get is the program of the load committed at index with source src:
// compiled on the first call for that index, then kept. A nil program
// with a nil error is no script (src empty). A source that no longer
// compiles (it did when the leader checked it) gives its error each time.
func (c *Cache) Get(index uint64, src string) (*Program, error) {
	if src == "" {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.index == index && (c.prog != nil || c.err != nil) {
		return c.prog, c.err
	}
	c.index = index
	c.prog, c.err = Compile(src)
	return c.prog, c.err
}
