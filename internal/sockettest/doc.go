// Package sockettest holds what the tests of the stub's user socket share:
// an HTTP client that dials the socket, and a way to call it as another
// uid by running the test binary itself under that uid.
//
// A test package that calls the socket as another uid makes its TestMain
// sockettest.Main, so that the copy of the binary started by CallAs makes
// the call and exits instead of running the tests.
package sockettest
