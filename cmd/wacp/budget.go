package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/wacpd/wacpd/internal/strictjson"
	"github.com/wacpd/wacpd/workspace"
)

func workspaceBudget(c *cli, args []string) error { return budgetAs(c, args, false) }

// budgetAs is "workspace budget" (the coordinator or a delegate), or with
// person "highway budget" (a user token with modify_budget or
// modify_budget_any): raise the limits --budget names.
func budgetAs(c *cli, args []string, person bool) error {
	cmd := "workspace budget"
	if person {
		cmd = "highway budget"
	}
	fs := c.flags(cmd, cmd+` ID --budget JSON   e.g. --budget '{"compute_budget":{"token_limit":200000}}'`)
	raw := fs.String("budget", "", "the limits to raise (JSON, the shape of workspace create's --budget; required)")
	pos, err := parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if err := required(cmd, [2]string{*raw, "--budget is required (the limits to raise, as JSON)"}); err != nil {
		return err
	}
	b := new(workspace.Budget)
	if err := strictjson.Decode([]byte(*raw), b); err != nil {
		return usagef(cmd, "--budget: %v", err)
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	modify := cl.ModifyBudget
	if person {
		modify = cl.PersonModifyBudget
	}
	w, err := modify(c.ctx, pos[0], b)
	if err != nil {
		return err
	}
	return c.print(w, func(tw io.Writer) {
		budget, _ := json.Marshal(w.Budget)
		fmt.Fprintf(tw, "workspace\t%s\nbudget\t%s\n", w.ID, budget)
	})
}
