package runtime

import "fmt"

// checkLimits refuses the budget and admission settings no run can use
// (Config.BudgetWarnPercent, Config.Capacity): the daemon's flags
// (-budget-warn-percent, -max-live-workspaces, -workspace-memory-mb,
// -workspace-disk-mb) reach the engine unchanged, and a bad value stops
// the start rather than falling back to a default.
func (c Config) checkLimits() error {
	if p := c.BudgetWarnPercent; p < 0 || p > 99 {
		return fmt.Errorf("runtime: config: BudgetWarnPercent %d: want 1 to 99 (0: %d)", p, defaultBudgetWarnPercent)
	}
	if m := c.Capacity.MemoryPerWorkspace; m < 0 {
		return fmt.Errorf("runtime: config: Capacity.MemoryPerWorkspace %d: want 0 (%d bytes) or more bytes", m, defaultMemoryPerWS)
	}
	if s := c.Capacity.StoragePerWorkspace; s < 0 {
		return fmt.Errorf("runtime: config: Capacity.StoragePerWorkspace %d: want 0 (%d bytes) or more bytes", s, defaultStoragePerWS)
	}
	return nil
}
