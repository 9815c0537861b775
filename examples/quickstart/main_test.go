package main

import (
	"context"
	"testing"
)

// TestQuickstart runs the whole transcript: every flow must succeed.
func TestQuickstart(t *testing.T) {
	if err := run(context.Background()); err != nil {
		t.Fatal(err)
	}
}
