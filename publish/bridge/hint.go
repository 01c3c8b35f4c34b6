package bridge

import (
	"context"
	"path"

	"github.com/zkherald/herald/elect"
)

// hadoopLock is the node Hadoop's ActiveStandbyElector holds below each
// nameservice (HDFS) or cluster (YARN): a single-node leader.
const hadoopLock = "ActiveStandbyElectorLock"

// hadoopBreadCrumb is the persistent node beside it: the last active
// node's record, kept until a new active fences it.
const hadoopBreadCrumb = "ActiveBreadCrumb"

// MisplacedBelow reports whether child, listed at a pattern's "*" level
// whose level below is the literal name next, is itself a node the
// pattern reads there: Hadoop's lock or breadcrumb listed as a
// nameservice. The pattern's root is then a nameservice, not the parent
// of nameservices, and the child is no level to look below.
func MisplacedBelow(child, next string) bool {
	return next == hadoopLock && (child == hadoopLock || child == hadoopBreadCrumb)
}

// warnMisplaced logs, once per level, that its root holds what the
// pattern looks for one level down: it is one level too deep.
func (b *Bridge) warnMisplaced(lv *level, child string) {
	if lv.misplaced {
		return
	}
	lv.misplaced = true
	b.log.Warn("a pattern's root holds what the pattern looks for below each of its children: the root is one level too deep (for --preset hadoop-ha=PARENT, PARENT is the parent of the nameservices); skipping it",
		"root", lv.root, "child", child, "parent", path.Dir(lv.root))
}

// hintLeaderLayouts logs, once per root, when the children of a discover
// root look like Hadoop HA nameservices: read as groups they hold no
// queue, so the bridge would publish them without an owner while their
// leader holds its single node, which --preset hadoop-ha reads. Only the
// first few children are looked at.
func (b *Bridge) hintLeaderLayouts(ctx context.Context, s *elect.Session, lv *level, children []string) {
	if lv.hinted || len(lv.rest) > 0 || len(children) == 0 {
		return
	}
	lv.hinted = true
	for i, c := range children {
		if i == 3 {
			return
		}
		if _, err := statNode(ctx, s.Conn(), path.Join(childOf(lv.root, c), hadoopLock)); err == nil {
			b.log.Warn("discover root's children look like Hadoop HA nameservices, whose leader is one ephemeral node, not a queue: as groups they have no owner; observe them with --preset hadoop-ha=ROOT instead",
				"root", lv.root, "child", c, "leader_node", hadoopLock, "preset", "hadoop-ha="+lv.root)
			return
		}
	}
}
