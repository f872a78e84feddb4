package chakra

import (
	"errors"
	"fmt"
	"io"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// ReadTrace is the reference reader of a Chakra trace: it reads the whole
// stream as Chakra's decodeMessage does (a varint length, then that many
// bytes of message: first a GlobalMetadata, then Nodes until the stream
// ends) and decodes each message from et_def.proto's field numbers, written
// out again here rather than shared with WriteTrace, so that the tests
// check the writer against an independent reading of the schema.
//
// It accepts repeated ids packed or not, skips fields it does not know
// (IOInfo, other attribute kinds, which it returns with Kind 0), and fails
// on a truncated length or message, a field of the wrong wire type, a
// zero-length message (where Chakra's reader would stop early) and a
// stream without the GlobalMetadata.
func ReadTrace(r io.Reader) (Metadata, []Node, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Metadata{}, nil, err
	}
	var md Metadata
	var nodes []Node
	seen := false
	for i := 0; len(data) > 0; i++ {
		size, n := protowire.ConsumeVarint(data)
		if n < 0 {
			return md, nodes, fmt.Errorf("chakra: message %d: truncated length", i)
		}
		data = data[n:]
		if size == 0 {
			return md, nodes, fmt.Errorf("chakra: message %d: zero length (Chakra's reader stops there)", i)
		}
		if size > uint64(len(data)) {
			return md, nodes, fmt.Errorf("chakra: message %d: %d bytes announced, %d left: truncated", i, size, len(data))
		}
		msg := data[:size]
		data = data[size:]
		if i == 0 {
			seen = true
			if md, err = readMetadata(msg); err != nil {
				return md, nil, fmt.Errorf("chakra: global metadata: %w", err)
			}
			continue
		}
		var nd Node
		if err := readNode(msg, &nd); err != nil {
			return md, nodes, fmt.Errorf("chakra: node message %d: %w", i-1, err)
		}
		nodes = append(nodes, nd)
	}
	if !seen {
		return md, nil, errors.New("chakra: no global metadata")
	}
	return md, nodes, nil
}

// field is one field of a message: its number and type and, by type, its
// varint, fixed64 or bytes value.
type field struct {
	num   protowire.Number
	typ   protowire.Type
	u     uint64
	bytes []byte
}

// fields calls f on every field of msg in order.
func fields(msg []byte, f func(field) error) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return fmt.Errorf("bad tag: %w", protowire.ParseError(n))
		}
		msg = msg[n:]
		fl := field{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			fl.u, n = protowire.ConsumeVarint(msg)
		case protowire.Fixed64Type:
			fl.u, n = protowire.ConsumeFixed64(msg)
		case protowire.BytesType:
			fl.bytes, n = protowire.ConsumeBytes(msg)
		default:
			n = protowire.ConsumeFieldValue(num, typ, msg)
		}
		if n < 0 {
			return fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
		}
		msg = msg[n:]
		if err := f(fl); err != nil {
			return err
		}
	}
	return nil
}

// want checks a known field's wire type.
func (fl field) want(t protowire.Type) error {
	if fl.typ != t {
		return fmt.Errorf("field %d has wire type %d, want %d", fl.num, fl.typ, t)
	}
	return nil
}

func readMetadata(msg []byte) (Metadata, error) {
	var md Metadata
	err := fields(msg, func(fl field) error {
		switch fl.num {
		case 1: // string version
			if err := fl.want(protowire.BytesType); err != nil {
				return err
			}
			md.Version = string(fl.bytes)
		case 2: // repeated AttributeProto attr
			if err := fl.want(protowire.BytesType); err != nil {
				return err
			}
			a, err := readAttr(fl.bytes)
			if err != nil {
				return err
			}
			md.Attrs = append(md.Attrs, a)
		}
		return nil
	})
	return md, err
}

func readNode(msg []byte, nd *Node) error {
	return fields(msg, func(fl field) error {
		switch fl.num {
		case 1, 3, 6, 7: // uint64 id, NodeType type, uint64 start_time_micros, uint64 duration_micros
			if err := fl.want(protowire.VarintType); err != nil {
				return err
			}
			switch fl.num {
			case 1:
				nd.ID = fl.u
			case 3:
				nd.Type = NodeType(int32(fl.u))
			case 6:
				nd.StartMicros = fl.u
			default:
				nd.DurationMicros = fl.u
			}
		case 2: // string name
			if err := fl.want(protowire.BytesType); err != nil {
				return err
			}
			nd.Name = string(fl.bytes)
		case 4, 5: // repeated uint64 ctrl_deps, data_deps
			dst := &nd.CtrlDeps
			if fl.num == 5 {
				dst = &nd.DataDeps
			}
			switch fl.typ {
			case protowire.VarintType:
				*dst = append(*dst, fl.u)
			case protowire.BytesType:
				for b := fl.bytes; len(b) > 0; {
					v, n := protowire.ConsumeVarint(b)
					if n < 0 {
						return fmt.Errorf("field %d: bad packed id", fl.num)
					}
					*dst = append(*dst, v)
					b = b[n:]
				}
			default:
				return fl.want(protowire.BytesType)
			}
		case 10: // repeated AttributeProto attr
			if err := fl.want(protowire.BytesType); err != nil {
				return err
			}
			a, err := readAttr(fl.bytes)
			if err != nil {
				return err
			}
			nd.Attrs = append(nd.Attrs, a)
		}
		return nil
	})
}

func readAttr(msg []byte) (Attr, error) {
	var a Attr
	err := fields(msg, func(fl field) error {
		num := fl.num
		switch {
		case num == 1: // string name
			if err := fl.want(protowire.BytesType); err != nil {
				return err
			}
			a.Name = string(fl.bytes)
		case num == 3: // double double_val
			if err := fl.want(protowire.Fixed64Type); err != nil {
				return err
			}
			a.Kind, a.Float = KindDouble, math.Float64frombits(fl.u)
		case num == 7 || num == 9 || num == 11 || num == 13 || num == 27: // int32, int64, uint32, uint64, bool
			if err := fl.want(protowire.VarintType); err != nil {
				return err
			}
			switch num {
			case 7:
				a.Kind, a.Int = KindInt32, int64(int32(fl.u))
			case 9:
				a.Kind, a.Int = KindInt64, int64(fl.u)
			case 11:
				a.Kind, a.Uint = KindUint32, uint64(uint32(fl.u))
			case 13:
				a.Kind, a.Uint = KindUint64, fl.u
			default:
				a.Kind, a.Bool = KindBool, fl.u != 0
			}
		case num == 29: // string string_val
			if err := fl.want(protowire.BytesType); err != nil {
				return err
			}
			a.Kind, a.Str = KindString, string(fl.bytes)
		}
		return nil
	})
	return a, err
}
