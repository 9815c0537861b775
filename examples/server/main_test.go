package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// serve starts the server with args and returns its base URL; the server
// stops when the test ends and must stop cleanly.
func serve(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), pw)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	var url string
	for lines.Scan() {
		if m := regexp.MustCompile(`url=(\S+)`).FindStringSubmatch(lines.Text()); m != nil {
			url = m[1]
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("server stopped with %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("server did not stop")
		}
	})
	if url == "" {
		t.Fatal("the server printed no address")
	}
	return url
}

func TestServerMemory(t *testing.T) {
	base := serve(t, "-client-id", "id-1", "-client-secret", "s3cret")
	req, _ := http.NewRequest("POST", base+"/customers", strings.NewReader(`{"customerType":"INDIVIDUAL","fullName":"Ada Lovelace","email":"ada@example.com"}`))
	req.SetBasicAuth("id-1", "s3cret")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 201 {
		t.Fatalf("create customer: %d", res.StatusCode)
	}
	res, err = http.Get(base + "/customers")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 401 {
		t.Fatalf("without credentials: %d", res.StatusCode)
	}
}

func TestServerPostgres(t *testing.T) {
	dsn := os.Getenv("WALLETGATE_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("set WALLETGATE_POSTGRES_DSN to run the server on PostgreSQL (CI sets it)")
	}
	base := serve(t, "-postgres", dsn)
	// The database outlives the test: a fresh email keeps runs independent.
	email := fmt.Sprintf("grace+%d@example.com", time.Now().UnixNano())
	req, _ := http.NewRequest("POST", base+"/customers", strings.NewReader(`{"customerType":"INDIVIDUAL","fullName":"Grace Hopper","email":"`+email+`"}`))
	req.SetBasicAuth("sandbox-client-id", "sandbox-client-secret")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 201 {
		t.Fatalf("create customer on PostgreSQL: %d", res.StatusCode)
	}
}

func TestServerBadFlags(t *testing.T) {
	if err := run(context.Background(), []string{"-nope"}, io.Discard); err == nil {
		t.Fatal("an unknown flag was accepted")
	}
}
