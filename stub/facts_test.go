package stub

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestFacts(t *testing.T) {
	s := newTestStub(t, Config{Name: "facts-machine"})
	f, err := stubClient(t, s).Facts(context.Background())
	if err != nil {
		t.Fatalf("Facts: %v", err)
	}
	out, err := exec.Command("uname", "-m").Output()
	if err != nil {
		t.Fatalf("uname -m: %v", err)
	}
	if want := strings.TrimSpace(string(out)); f.Arch != want {
		t.Errorf("Arch = %q, want %q", f.Arch, want)
	}
	if f.Name != "facts-machine" {
		t.Errorf("Name = %q, want %q", f.Name, "facts-machine")
	}
	if f.CPUs <= 0 || f.MemoryMB <= 0 || f.Load < 0 {
		t.Errorf("CPUs %d, MemoryMB %d, Load %v, want positive", f.CPUs, f.MemoryMB, f.Load)
	}
	if f.HTTPAddr != s.HTTPAddr() {
		t.Errorf("HTTPAddr = %q, want %q", f.HTTPAddr, s.HTTPAddr())
	}
	if !slices.IsSorted(f.Mounts) {
		t.Errorf("Mounts %v are not sorted", f.Mounts)
	}
	for _, pseudo := range []string{"/proc", "/sys", "/dev/pts"} {
		if slices.Contains(f.Mounts, pseudo) {
			t.Errorf("Mounts %v contain %s", f.Mounts, pseudo)
		}
	}
}

func TestHTTP(t *testing.T) {
	s := newTestStub(t, Config{})
	tests := []struct {
		name       string
		method     string
		path       string
		body       string
		wantStatus int
	}{
		{name: "health", method: "GET", path: "/v1/health", wantStatus: 200},
		{name: "unknown endpoint", method: "GET", path: "/v1/nope", wantStatus: 404},
		{name: "bad JSON", method: "POST", path: "/v1/starts", body: "{", wantStatus: 400},
		{name: "too many starts", method: "POST", path: "/v1/starts", body: `{"starts":[` + strings.Repeat(`{},`, maxBatchStarts) + `{}]}`, wantStatus: 400},
		{name: "no single start", method: "POST", path: "/v1/start", body: `{"job_id":1}`, wantStatus: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, "http://"+s.HTTPAddr()+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if resp.StatusCode >= 300 {
				var e struct{ Error string }
				if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e.Error == "" {
					t.Errorf("error body: %v, %q; want a JSON error", err, e.Error)
				}
			}
		})
	}
}

func TestNewNeedsDataDir(t *testing.T) {
	_, err := New(Config{Name: "x"})
	if !errors.Is(err, ErrNoDataDir) {
		t.Errorf("New = %v, want ErrNoDataDir", err)
	}
}
