package dblang

// Parse reads a database file. filename names the file in positions and
// errors. On any problem it returns a nil Database and an ErrorList with
// every problem it found, sorted by position, each saying what to do; a
// file with any error therefore changes nothing. Parse never panics and is
// safe to call concurrently.
func Parse(filename string, src []byte) (*Database, error) {
	errs := &errorSink{}
	toks, comments := lex(filename, src, errs)
	p := &parser{toks: toks, comments: comments, errs: errs}
	decls := p.decls()
	db := check(decls, errs)
	if err := errs.err(); err != nil {
		return nil, err
	}
	return db, nil
}
