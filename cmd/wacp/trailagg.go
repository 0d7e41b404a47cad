package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/trail"
)

func trailAggregate(c *cli, args []string) error {
	const cmd = "trail aggregate"
	fs := c.flags(cmd, cmd+" [--group F] [--sum body.PATH] [--workspace WS] [--type T] [--actor A] [--since T] [--until T] [--body k=v]...\n\nCounts the trail entries the filters select (AND-combined), partitioned by --group (event_type,\nworkspace, actor or body.PATH) and summing the numeric body field --sum (e.g. body.new_limit).\nCoordinator, user (over what it may read) or auditor token.")
	var q client.TrailAggregateRequest
	var typ string
	fs.StringVar(&q.GroupBy, "group", "", "partition by event_type, workspace, actor or body.PATH")
	fs.StringVar(&q.Sum, "sum", "", "sum this numeric body field, body.PATH")
	trailFilterFlags(fs, &q.Workspace, &typ, &q.Actor, &q.Since, &q.Until, &q.Body)
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	q.EventType = trail.EventType(typ)
	cl, err := c.dial()
	if err != nil {
		return err
	}
	res, err := cl.AggregateTrail(c.ctx, q)
	if err != nil {
		return err
	}
	return c.print(res, func(w io.Writer) {
		sum := func(s *trail.Sum) string {
			if s == nil {
				return ""
			}
			exact := ""
			if !s.Exact {
				exact = "~"
			}
			return fmt.Sprintf("\t%s%s\t%d\t%d", exact, s.Total, s.Values, s.Skipped)
		}
		head := "COUNT"
		if res.Sum != nil {
			head += "\tSUM(" + res.SumOf + ")\tVALUES\tSKIPPED"
		}
		if res.GroupBy != "" {
			fmt.Fprintln(w, strings.ToUpper(res.GroupBy)+"\t"+head)
			for _, g := range res.Groups {
				key := string(g.Key)
				if key == "null" {
					key = "-"
				} else if s, ok := strings.CutPrefix(key, `"`); ok {
					key = strings.TrimSuffix(s, `"`)
				}
				fmt.Fprintf(w, "%s\t%d%s\n", key, g.Count, sum(g.Sum))
			}
			fmt.Fprintf(w, "(all)\t%d%s\n", res.Count, sum(res.Sum))
			return
		}
		fmt.Fprintln(w, head)
		fmt.Fprintf(w, "%d%s\n", res.Count, sum(res.Sum))
	})
}
