package workspace

import (
	"errors"
	"testing"
	"time"
)

func tokens(n int64) *Budget { return &Budget{ComputeBudget: &ComputeBudget{TokenLimit: n}} }

func TestBudgetLimit(t *testing.T) {
	cost := 2.5
	b := &Budget{
		ComputeBudget: &ComputeBudget{TokenLimit: 10, ComputeTimeout: "1m"},
		MemoryBudget:  &MemoryBudget{ContextLimit: 0},
		StorageBudget: &StorageBudget{CheckpointLimit: 3, TrailLimit: 0},
		NetworkBudget: &NetworkBudget{BandwidthLimit: 7},
		CostLimit:     &cost,
	}
	tests := []struct {
		d    Dimension
		want float64
		ok   bool
	}{
		{DimTokens, 10, true}, {DimCompute, float64(time.Minute), true}, {DimContext, 0, false},
		{DimCheckpoints, 3, true}, {DimTrail, 0, false}, {DimBandwidth, 7, true}, {DimCost, 2.5, true},
	}
	for _, tt := range tests {
		if got, ok := b.Limit(tt.d); got != tt.want || ok != tt.ok {
			t.Errorf("Limit(%s) = %v, %v; want %v, %v", tt.d, got, ok, tt.want, tt.ok)
		}
	}
	if (*Budget)(nil).Limited() || (&Budget{}).Limited() || !b.Limited() {
		t.Error("Limited: nil and empty budgets limit nothing; b limits")
	}
}

func TestFits(t *testing.T) {
	tests := []struct {
		name     string
		child    *Budget
		parent   *Budget
		used     Usage
		siblings []*Budget
		ok       bool
	}{
		{"parent unlimited", nil, nil, nil, nil, true},
		{"within", tokens(500), tokens(1000), Usage{DimTokens: 400}, nil, true},
		{"exactly what is left", tokens(300), tokens(1000), Usage{DimTokens: 400}, []*Budget{tokens(300)}, true},
		{"one over", tokens(301), tokens(1000), Usage{DimTokens: 400}, []*Budget{tokens(300)}, false},
		{"unlimited under a limit", nil, tokens(1000), nil, nil, false},
		{"other dimension", &Budget{CostLimit: new(float64)}, tokens(1000), nil, nil, false},
		{"overspent parent", tokens(1), tokens(10), Usage{DimTokens: 20}, nil, false},
	}
	for _, tt := range tests {
		err := Fits(tt.child, tt.parent, tt.used, tt.siblings)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrContainment)) {
			t.Errorf("%s: Fits = %v, want ok %v (ErrContainment otherwise)", tt.name, err, tt.ok)
		}
	}
}

func TestRaise(t *testing.T) {
	b := &Budget{ComputeBudget: &ComputeBudget{TokenLimit: 100, ComputeTimeout: "1h"}}
	nb, ch, err := Raise(b, &Budget{ComputeBudget: &ComputeBudget{TokenLimit: 100, ComputeTimeout: "2h"}})
	if err != nil || len(ch) != 1 || ch[0].Dimension != DimCompute || nb.ComputeBudget.ComputeTimeout != "2h0m0s" || nb.ComputeBudget.TokenLimit != 100 {
		t.Fatalf("Raise(compute_timeout 2h) = %+v, %+v, %v", nb, ch, err)
	}
	if b.ComputeBudget.ComputeTimeout != "1h" {
		t.Fatalf("Raise changed its input: %+v", b.ComputeBudget)
	}
	for name, req := range map[string]*Budget{
		"lower":    tokens(99),
		"new":      {MemoryBudget: &MemoryBudget{ContextLimit: 5}},
		"empty":    {},
		"nil":      nil,
		"negative": {StorageBudget: &StorageBudget{CheckpointLimit: -1}},
	} {
		if _, _, err := Raise(b, req); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("Raise(%s) = %v, want ErrInvalidRequest", name, err)
		}
	}
}
