package workspace

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Dimension names one limit of a budget, as budget_warning, budget_exceeded
// and budget_modified write it in budget_dimension: the limit's path in the
// budget object (WACP Workspace §4, §6).
type Dimension string

// The seven budget dimensions. Persisted as their string values.
const (
	DimTokens      Dimension = "compute_budget.token_limit"
	DimCompute     Dimension = "compute_budget.compute_timeout" // nanoseconds of active time
	DimContext     Dimension = "memory_budget.context_limit"
	DimCheckpoints Dimension = "storage_budget.checkpoint_limit"
	DimTrail       Dimension = "storage_budget.trail_limit"
	DimBandwidth   Dimension = "network_budget.bandwidth_limit"
	DimCost        Dimension = "cost_limit"
)

// Dimensions returns the seven dimensions in the budget's order.
func Dimensions() []Dimension {
	return []Dimension{DimTokens, DimCompute, DimContext, DimCheckpoints, DimTrail, DimBandwidth, DimCost}
}

// Valid reports whether d is one of the seven.
func (d Dimension) Valid() bool { return slices.Contains(Dimensions(), d) }

// Limit returns b's limit in dimension d and whether b sets one. A zero
// integer limit sets none (the create request's limits are optional and
// encode absent as 0), nor does an absent part; compute_timeout is in
// nanoseconds. A nil b limits nothing.
func (b *Budget) Limit(d Dimension) (float64, bool) {
	if b == nil {
		return 0, false
	}
	pos := func(v int64) (float64, bool) { return float64(v), v > 0 }
	switch d {
	case DimTokens:
		if c := b.ComputeBudget; c != nil {
			return pos(c.TokenLimit)
		}
	case DimCompute:
		if c := b.ComputeBudget; c != nil && c.ComputeTimeout != "" {
			v, err := time.ParseDuration(c.ComputeTimeout)
			return float64(v), err == nil && v > 0
		}
	case DimContext:
		if m := b.MemoryBudget; m != nil {
			return pos(m.ContextLimit)
		}
	case DimCheckpoints:
		if s := b.StorageBudget; s != nil {
			return pos(s.CheckpointLimit)
		}
	case DimTrail:
		if s := b.StorageBudget; s != nil {
			return pos(s.TrailLimit)
		}
	case DimBandwidth:
		if n := b.NetworkBudget; n != nil {
			return pos(n.BandwidthLimit)
		}
	case DimCost:
		if b.CostLimit != nil {
			return *b.CostLimit, true
		}
	}
	return 0, false
}

// Limited reports whether b sets a limit in any dimension.
func (b *Budget) Limited() bool {
	for _, d := range Dimensions() {
		if _, ok := b.Limit(d); ok {
			return true
		}
	}
	return false
}

// Clone returns a deep copy of b (nil for nil).
func (b *Budget) Clone() *Budget {
	if b == nil {
		return nil
	}
	c := *b
	if b.ComputeBudget != nil {
		v := *b.ComputeBudget
		c.ComputeBudget = &v
	}
	if b.MemoryBudget != nil {
		v := *b.MemoryBudget
		c.MemoryBudget = &v
	}
	if b.StorageBudget != nil {
		v := *b.StorageBudget
		c.StorageBudget = &v
	}
	if b.NetworkBudget != nil {
		v := *b.NetworkBudget
		c.NetworkBudget = &v
	}
	if b.CostLimit != nil {
		v := *b.CostLimit
		c.CostLimit = &v
	}
	return &c
}

// set returns a copy of b with dimension d's limit set to v (nanoseconds
// for compute_timeout).
func (b *Budget) set(d Dimension, v float64) *Budget {
	c := b.Clone()
	if c == nil {
		c = &Budget{}
	}
	compute := func() *ComputeBudget {
		if c.ComputeBudget == nil {
			c.ComputeBudget = &ComputeBudget{}
		}
		return c.ComputeBudget
	}
	storage := func() *StorageBudget {
		if c.StorageBudget == nil {
			c.StorageBudget = &StorageBudget{}
		}
		return c.StorageBudget
	}
	switch d {
	case DimTokens:
		compute().TokenLimit = int64(v)
	case DimCompute:
		compute().ComputeTimeout = time.Duration(v).String()
	case DimContext:
		c.MemoryBudget = &MemoryBudget{ContextLimit: int64(v)}
	case DimCheckpoints:
		storage().CheckpointLimit = int64(v)
	case DimTrail:
		storage().TrailLimit = int64(v)
	case DimBandwidth:
		c.NetworkBudget = &NetworkBudget{BandwidthLimit: int64(v)}
	case DimCost:
		c.CostLimit = &v
	}
	return c
}

// Usage is a workspace's consumption by dimension, as its resource meter
// holds it.
type Usage map[Dimension]float64

// Fits checks WACP's budget containment (Tree T-7, Roles §4): in every
// dimension parent limits, child must set a limit no larger than what
// the parent has left, its limit less its own consumption used and the
// limits of its other children siblings (carved out when they were
// created, whatever became of them). A child without a limit where its
// parent has one does not fit. A dimension the parent does not limit
// constrains nothing. The error wraps ErrContainment and names the
// dimension, the child's limit and what is left.
func Fits(child, parent *Budget, used Usage, siblings []*Budget) error {
	for _, d := range Dimensions() {
		pl, ok := parent.Limit(d)
		if !ok {
			continue
		}
		left := pl - used[d]
		for _, s := range siblings {
			if v, ok := s.Limit(d); ok {
				left -= v
			}
		}
		left = math.Max(left, 0)
		cl, ok := child.Limit(d)
		switch {
		case !ok:
			return fmt.Errorf("%w: budget %s is unlimited, but the parent has %s left", ErrContainment, d, Format(d, left))
		case cl > left:
			return fmt.Errorf("%w: budget %s of %s exceeds the %s the parent has left", ErrContainment, d, Format(d, cl), Format(d, left))
		}
	}
	return nil
}

// Change is one limit a budget modification raises.
type Change struct {
	Dimension Dimension
	Old, New  float64
}

// Raise applies the limits set in req to budget b (WACP Workspace §6,
// budget modification): additive only, each limit req sets must be at
// least b's limit in that dimension, and b must already limit it (a
// dimension without a limit is unlimited: a limit there would be a
// decrease). It returns the new budget and the limits that changed, in
// dimension order; equal limits change nothing. An error wraps
// ErrInvalidRequest.
func Raise(b, req *Budget) (*Budget, []Change, error) {
	if req == nil || !req.Limited() {
		return nil, nil, fmt.Errorf("%w: budget: name at least one limit to raise", ErrInvalidRequest)
	}
	if err := req.check(); err != nil {
		return nil, nil, fmt.Errorf("%w: budget: %v", ErrInvalidRequest, err)
	}
	out := b.Clone()
	var changes []Change
	for _, d := range Dimensions() {
		nv, ok := req.Limit(d)
		if !ok {
			continue
		}
		ov, had := b.Limit(d)
		switch {
		case !had:
			return nil, nil, fmt.Errorf("%w: budget %s is unlimited; a limit would lower it", ErrInvalidRequest, d)
		case nv < ov:
			return nil, nil, fmt.Errorf("%w: budget %s: %s is below the current limit %s (budgets are only raised)", ErrInvalidRequest, d, Format(d, nv), Format(d, ov))
		case nv == ov:
			continue
		}
		out = out.set(d, nv)
		changes = append(changes, Change{d, ov, nv})
	}
	return out, changes, nil
}

// Format writes v, an amount of dimension d, as the trail writes it: a
// duration for compute_timeout, a decimal otherwise.
func Format(d Dimension, v float64) string {
	if d == DimCompute {
		return time.Duration(v).String()
	}
	return fmt.Sprint(v)
}

// Value returns v, an amount of dimension d, as budget events carry it: a
// duration string for compute_timeout, an integer for the integer limits,
// the number itself for cost.
func Value(d Dimension, v float64) any {
	switch d {
	case DimCompute:
		return time.Duration(v).String()
	case DimCost:
		return v
	}
	return int64(v)
}
