package sockettest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

// callEnv, when set in the environment of a test binary whose TestMain is
// Main, makes it call the user socket the variable names and exit. Its
// arguments are the method, the path and the body; it prints the answer's
// status and body. Every call claims to be root in every header a caller
// could use, so that the tests see the stub ignore them.
const callEnv = "NETMGR_TEST_CALL_SOCKET"

// Main is a TestMain: it makes the call of CallAs when this binary was
// started for one, and runs the tests otherwise.
func Main(m *testing.M) {
	if path := os.Getenv(callEnv); path != "" {
		os.Exit(call(path, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// call makes the call of callEnv and returns the exit status.
func call(path string, args []string) int {
	if len(args) != 3 {
		fmt.Println("call: want METHOD PATH BODY, got", args)
		return 2
	}
	req, err := http.NewRequest(args[0], "http://netmgr-stub"+args[1], strings.NewReader(args[2]))
	if err != nil {
		fmt.Println("call:", err)
		return 2
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(client.UserHeader, "root")
	req.Header.Set(client.VouchedUserHeader, "root")
	req.Header.Set(client.ForwardedPrincipalHeader, `{"user":"root","machine":"m1"}`)
	req.Header.Set("Authorization", "Bearer forged")
	resp, err := HTTP(path).Do(req)
	if err != nil {
		fmt.Println("call:", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d %s", resp.StatusCode, body)
	return 0
}

// CallAs runs a copy of this test binary as uid:gid to make one call on the
// user socket at path, and returns the answer's status and body. It needs
// root, a TestMain that is Main, and the socket's directories open to the
// uid (OpenToAll).
func CallAs(t testing.TB, uid, gid int, path, method, urlPath, body string) (int, string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(os.Args[0]))
	OpenToAll(t, filepath.Dir(bin))
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatalf("read the test binary: %v", err)
	}
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatalf("copy the test binary: %v", err)
	}
	cmd := exec.Command(bin, method, urlPath, body)
	cmd.Env = []string{callEnv + "=" + path}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("call the socket as uid %d: %v\n%s", uid, err, out)
	}
	var status int
	if _, err := fmt.Sscanf(string(out), "%d ", &status); err != nil {
		t.Fatalf("call the socket as uid %d: %q", uid, out)
	}
	_, rest, _ := strings.Cut(string(out), " ")
	return status, rest
}

// OpenToAll lets every user enter dirs and their parents up to the
// system's temporary directory (the testing package makes them 0700).
func OpenToAll(t testing.TB, dirs ...string) {
	t.Helper()
	top := filepath.Clean(os.TempDir())
	for _, d := range dirs {
		for d = filepath.Clean(d); d != top && strings.HasPrefix(d, top+"/"); d = filepath.Dir(d) {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatalf("open %s to every user: %v", d, err)
			}
		}
	}
}

// HTTP is an HTTP client whose every request goes to the Unix socket at
// path, whatever host a URL names, as the job commands' does.
func HTTP(path string) *http.Client {
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}}
}
