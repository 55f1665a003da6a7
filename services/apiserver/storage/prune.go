package storage

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// FieldPruner keeps, of an object's wire encoding, only the fields on a
// kind's selectable field paths ("metadata.name", "spec.nodeName"): the
// values a field selector matches are then computed from a decode of a few
// strings instead of the whole object (the watch cache does it for every
// event of a kind that any watcher selects by field, as node agents do
// for pods). Every occurrence of a kept field is kept, so protobuf's merge
// rules give the same values as a decode of the whole object.
type FieldPruner struct{ root *pruneNode }

// pruneNode is a message's fields to keep: a nil child keeps the field
// whole, a non-nil one keeps only its own kept fields.
type pruneNode struct {
	fields map[protowire.Number]*pruneNode
}

// NewFieldPruner resolves paths (JSON field names joined by dots, as field
// selectors name them) against the message md.
func NewFieldPruner(md protoreflect.MessageDescriptor, paths []string) (*FieldPruner, error) {
	root := &pruneNode{fields: map[protowire.Number]*pruneNode{}}
	for _, path := range paths {
		node, cur := root, md
		parts := strings.Split(path, ".")
		for i, part := range parts {
			fd := cur.Fields().ByJSONName(part)
			if fd == nil {
				fd = cur.Fields().ByName(protoreflect.Name(part))
			}
			if fd == nil {
				return nil, fmt.Errorf("field selector path %q: %s has no field %q", path, cur.FullName(), part)
			}
			num := protowire.Number(fd.Number())
			if i == len(parts)-1 {
				node.fields[num] = nil // the whole field, whatever was kept of it before
				break
			}
			if fd.Kind() != protoreflect.MessageKind || fd.IsList() || fd.IsMap() {
				return nil, fmt.Errorf("field selector path %q: %s is not a message", path, fd.FullName())
			}
			child, seen := node.fields[num]
			if seen && child == nil {
				break // kept whole already
			}
			if !seen {
				child = &pruneNode{fields: map[protowire.Number]*pruneNode{}}
				node.fields[num] = child
			}
			node, cur = child, fd.Message()
		}
	}
	return &FieldPruner{root: root}, nil
}

// Prune returns the encoding of the kept fields of raw.
func (p *FieldPruner) Prune(raw []byte) ([]byte, error) {
	return p.root.prune(raw, nil)
}

func (n *pruneNode) prune(msg, out []byte) ([]byte, error) {
	for len(msg) > 0 {
		num, wt, tagLen := protowire.ConsumeTag(msg)
		if tagLen < 0 {
			return nil, protowire.ParseError(tagLen)
		}
		valLen := protowire.ConsumeFieldValue(num, wt, msg[tagLen:])
		if valLen < 0 {
			return nil, protowire.ParseError(valLen)
		}
		field := msg[:tagLen+valLen]
		msg = msg[tagLen+valLen:]
		child, keep := n.fields[num]
		switch {
		case !keep:
		case child == nil || wt != protowire.BytesType:
			out = append(out, field...)
		default:
			v, _ := protowire.ConsumeBytes(field[tagLen:])
			sub, err := child.prune(v, nil)
			if err != nil {
				return nil, err
			}
			out = protowire.AppendTag(out, num, protowire.BytesType)
			out = protowire.AppendBytes(out, sub)
		}
	}
	return out, nil
}
