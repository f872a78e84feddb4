package chakra

import (
	"bytes"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// TestWriteTraceBytes pins the encoding to et_def.proto's field numbers
// byte by byte, worked out by hand from the schema (so a field number wrong
// in both the writer and ReadTrace cannot pass): GlobalMetadata{version = 1,
// attr = 2}, Node{id = 1, name = 2, type = 3, data_deps = 5 packed,
// duration_micros = 7, attr = 10}, AttributeProto{name = 1, int64_val = 9,
// bool_val = 27, string_val = 29}, each message after its varint length.
func TestWriteTraceBytes(t *testing.T) {
	md := Metadata{Version: "1.0.0", Attrs: []Attr{BoolAttr("x", false)}}
	nodes := []Node{{ID: 1, Name: "a", Type: CompNode, DataDeps: []uint64{0, 300}, DurationMicros: 5,
		Attrs: []Attr{Int64Attr("num_ops", -1), StringAttr("pg", "3")}}}
	want := []byte{
		15,                               // metadata: 15 bytes
		0x0a, 5, '1', '.', '0', '.', '0', // version
		0x12, 6, 0x0a, 1, 'x', 0xd8, 0x01, 0, // attr {name "x", bool_val false}
		46,      // node: 46 bytes
		0x08, 1, // id 1
		0x12, 1, 'a', // name
		0x18, 4, // type COMP_NODE
		0x2a, 3, 0, 0xac, 0x02, // data_deps [0, 300], packed
		0x38, 5, // duration_micros 5
		0x52, 20, 0x0a, 7, 'n', 'u', 'm', '_', 'o', 'p', 's', 0x48, // attr {name, int64_val -1}
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
		0x52, 8, 0x0a, 2, 'p', 'g', 0xea, 0x01, 1, '3', // attr {name "pg", string_val "3"}
	}
	var b bytes.Buffer
	if err := WriteTrace(&b, md, nodes); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Fatalf("encoded\n% x\nwant\n% x", b.Bytes(), want)
	}
}

// sampleTrace has every attribute kind, both kinds of dependency, ids
// beyond one varint byte and zero values that proto3 leaves out.
func sampleTrace() (Metadata, []Node) {
	md := Metadata{Version: SchemaVersion, Attrs: []Attr{StringAttr("scenario", "tiny"), Int64Attr("iteration", 1),
		DoubleAttr("pi", math.Pi), Uint32Attr("u32", math.MaxUint32)}}
	nodes := []Node{
		{ID: 0, Name: "planner-stall", Type: CompNode, DurationMicros: 96000, Attrs: []Attr{BoolAttr("is_cpu_op", true)}},
		{ID: 1, Name: "mb0.c0.F.layer0.comp", Type: CompNode, CtrlDeps: []uint64{0}, StartMicros: 96000, DurationMicros: 1234,
			Attrs: []Attr{BoolAttr("is_cpu_op", false), Int64Attr("num_ops", 1<<40), Uint64Attr("tensor_size", math.MaxUint64)}},
		{ID: 2, Name: "mb0.c0.F.layer0.cp-a2a", Type: CommCollNode, DataDeps: []uint64{1}, StartMicros: 97234,
			Attrs: []Attr{Int64Attr("comm_type", int64(AllToAll)), Int64Attr("comm_size", 37748736), StringAttr("pg_name", "12"),
				StringAttr("pg_desc", "cp:s0:t0:r0-7")}},
		{ID: 300, Name: "mb0.c0.F.send", Type: CommSendNode, DataDeps: []uint64{2, 1}, CtrlDeps: []uint64{1 << 50},
			Attrs: []Attr{Int32Attr("comm_src", 0), Int32Attr("comm_dst", 2047), Int32Attr("comm_tag", -5), Int64Attr("comm_size", 0)}},
		{ID: 1<<64 - 1, Name: "x", Type: CommRecvNode},
	}
	return md, nodes
}

// TestRoundTrip: what WriteTrace writes, ReadTrace reads back exactly.
func TestRoundTrip(t *testing.T) {
	md, nodes := sampleTrace()
	var b bytes.Buffer
	if err := WriteTrace(&b, md, nodes); err != nil {
		t.Fatal(err)
	}
	gmd, got, err := ReadTrace(&b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gmd, md) || !reflect.DeepEqual(got, nodes) {
		t.Fatalf("read back\n%+v\n%+v\nwant\n%+v\n%+v", gmd, got, md, nodes)
	}
}

// TestReadTraceRejectsTruncation: every cut of a trace inside a message
// (its length or its body) is an error; a cut between messages reads the
// nodes before it.
func TestReadTraceRejectsTruncation(t *testing.T) {
	md, nodes := sampleTrace()
	var b bytes.Buffer
	if err := WriteTrace(&b, md, nodes); err != nil {
		t.Fatal(err)
	}
	full := b.Bytes()
	bounds := map[int]int{} // message boundary offset → messages before it
	for off, k := 0, 0; off < len(full); k++ {
		size, n := protowire.ConsumeVarint(full[off:])
		off += n + int(size)
		bounds[off] = k + 1
	}
	for cut := 0; cut < len(full); cut++ {
		_, got, err := ReadTrace(bytes.NewReader(full[:cut]))
		k, boundary := bounds[cut]
		switch {
		case cut == 0:
			if err == nil {
				t.Errorf("an empty stream read without error")
			}
		case boundary:
			if err != nil || len(got) != k-1 {
				t.Errorf("cut at message boundary %d: %d nodes, %v; want %d", cut, len(got), err, k-1)
			}
		case err == nil:
			t.Errorf("cut at byte %d of %d read without error (%d nodes)", cut, len(full), len(got))
		}
	}
	if _, _, err := ReadTrace(bytes.NewReader([]byte{0})); err == nil || !strings.Contains(err.Error(), "zero length") {
		t.Errorf("a zero-length message: %v", err)
	}
	if _, _, err := ReadTrace(bytes.NewReader([]byte{2, 0x0a, 5})); err == nil {
		t.Error("a string running past its message was accepted")
	}
	if _, _, err := ReadTrace(bytes.NewReader([]byte{2, 0x0d, 0, 3, 0x0a, 1, 'v'})); err == nil {
		t.Error("a version of the wrong wire type was accepted")
	}
}

// TestWriteTraceRefuses: values the schema cannot carry, and messages that
// would encode to zero bytes, are errors.
func TestWriteTraceRefuses(t *testing.T) {
	md := Metadata{Version: SchemaVersion}
	for _, c := range []struct {
		md    Metadata
		nodes []Node
		want  string
	}{
		{Metadata{}, nil, "zero bytes"},
		{md, []Node{{}}, "zero bytes"},
		{md, []Node{{Name: "n", Attrs: []Attr{{Name: "k"}}}}, "unknown kind"},
		{md, []Node{{Name: "n", Attrs: []Attr{DoubleAttr("d", math.NaN())}}}, "finite"},
		{md, []Node{{Name: "n", Attrs: []Attr{{Name: "i", Kind: KindInt32, Int: 1 << 40}}}}, "32-bit"},
	} {
		if err := WriteTrace(&bytes.Buffer{}, c.md, c.nodes); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error containing %q", c, err, c.want)
		}
	}
}

// countingWriter counts the writes it is given.
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) { w.writes++; return w.Buffer.Write(p) }

// TestWriteTraceFlushes: a large trace goes to the writer in pieces and
// reads back whole.
func TestWriteTraceFlushes(t *testing.T) {
	nodes := make([]Node, 20000)
	for i := range nodes {
		nodes[i] = Node{ID: uint64(i), Name: "node", Type: CompNode, DataDeps: []uint64{uint64(max(i-1, 0))}, DurationMicros: uint64(i)}
	}
	var w countingWriter
	if err := WriteTrace(&w, Metadata{Version: SchemaVersion}, nodes); err != nil {
		t.Fatal(err)
	}
	_, got, err := ReadTrace(&w.Buffer)
	if err != nil || !reflect.DeepEqual(got, nodes) || w.writes < 2 {
		t.Fatalf("%d writes, %d nodes read, %v", w.writes, len(got), err)
	}
}

// schemaFile is the part of Chakra's et_def.proto the writer uses, as a
// descriptor built field by field from the published schema (package
// ChakraProtoMsg, proto3), for the protobuf library's own codec.
func schemaFile(t *testing.T) protoreflect.FileDescriptor {
	t.Helper()
	field := func(name string, num int32, typ descriptorpb.FieldDescriptorProto_Type, repeated bool, typeName string) *descriptorpb.FieldDescriptorProto {
		label := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL
		if repeated {
			label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED
		}
		f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(num), Type: typ.Enum(), Label: label.Enum(),
			JsonName: proto.String(name)}
		if typeName != "" {
			f.TypeName = proto.String(typeName)
		}
		return f
	}
	oneof := func(f *descriptorpb.FieldDescriptorProto) *descriptorpb.FieldDescriptorProto {
		f.OneofIndex = proto.Int32(0)
		return f
	}
	str, u64, i32, i64, u32, dbl, boo, msg, enm := descriptorpb.FieldDescriptorProto_TYPE_STRING, descriptorpb.FieldDescriptorProto_TYPE_UINT64,
		descriptorpb.FieldDescriptorProto_TYPE_INT32, descriptorpb.FieldDescriptorProto_TYPE_INT64, descriptorpb.FieldDescriptorProto_TYPE_UINT32,
		descriptorpb.FieldDescriptorProto_TYPE_DOUBLE, descriptorpb.FieldDescriptorProto_TYPE_BOOL, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE,
		descriptorpb.FieldDescriptorProto_TYPE_ENUM
	var nodeTypes []*descriptorpb.EnumValueDescriptorProto
	for i, n := range []string{"INVALID_NODE", "METADATA_NODE", "MEM_LOAD_NODE", "MEM_STORE_NODE", "COMP_NODE", "COMM_SEND_NODE", "COMM_RECV_NODE", "COMM_COLL_NODE"} {
		nodeTypes = append(nodeTypes, &descriptorpb.EnumValueDescriptorProto{Name: proto.String(n), Number: proto.Int32(int32(i))})
	}
	fd := &descriptorpb.FileDescriptorProto{
		Name: proto.String("et_def.proto"), Package: proto.String("ChakraProtoMsg"), Syntax: proto.String("proto3"),
		EnumType: []*descriptorpb.EnumDescriptorProto{{Name: proto.String("NodeType"), Value: nodeTypes}},
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("AttributeProto"), OneofDecl: []*descriptorpb.OneofDescriptorProto{{Name: proto.String("value")}},
				Field: []*descriptorpb.FieldDescriptorProto{
					field("name", 1, str, false, ""), field("doc_string", 2, str, false, ""),
					oneof(field("double_val", 3, dbl, false, "")), oneof(field("int32_val", 7, i32, false, "")),
					oneof(field("int64_val", 9, i64, false, "")), oneof(field("uint32_val", 11, u32, false, "")),
					oneof(field("uint64_val", 13, u64, false, "")), oneof(field("bool_val", 27, boo, false, "")),
					oneof(field("string_val", 29, str, false, "")),
				}},
			{Name: proto.String("GlobalMetadata"), Field: []*descriptorpb.FieldDescriptorProto{
				field("version", 1, str, false, ""), field("attr", 2, msg, true, ".ChakraProtoMsg.AttributeProto")}},
			{Name: proto.String("Node"), Field: []*descriptorpb.FieldDescriptorProto{
				field("id", 1, u64, false, ""), field("name", 2, str, false, ""), field("type", 3, enm, false, ".ChakraProtoMsg.NodeType"),
				field("ctrl_deps", 4, u64, true, ""), field("data_deps", 5, u64, true, ""),
				field("start_time_micros", 6, u64, false, ""), field("duration_micros", 7, u64, false, ""),
				field("attr", 10, msg, true, ".ChakraProtoMsg.AttributeProto")}},
		},
	}
	f, err := protodesc.NewFile(fd, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestProtobufLibraryReads: the protobuf library, given the schema's
// descriptor, parses every message WriteTrace writes into the values
// written, and its own deterministic encoding of them is byte for byte
// WriteTrace's.
func TestProtobufLibraryReads(t *testing.T) {
	file := schemaFile(t)
	mdDesc, nodeDesc := file.Messages().ByName("GlobalMetadata"), file.Messages().ByName("Node")
	md, nodes := sampleTrace()
	var b bytes.Buffer
	if err := WriteTrace(&b, md, nodes); err != nil {
		t.Fatal(err)
	}
	data := b.Bytes()
	for i := 0; len(data) > 0; i++ {
		size, n := protowire.ConsumeVarint(data)
		body := data[n : n+int(size)]
		data = data[n+int(size):]
		desc := nodeDesc
		if i == 0 {
			desc = mdDesc
		}
		m := dynamicpb.NewMessage(desc)
		if err := proto.Unmarshal(body, m); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		again, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil || !bytes.Equal(again, body) {
			t.Errorf("message %d: the library encodes it as\n% x\nWriteTrace wrote\n% x", i, again, body)
		}
		if i == 0 {
			if v := m.Get(desc.Fields().ByName("version")).String(); v != md.Version {
				t.Errorf("version %q", v)
			}
			continue
		}
		want := &nodes[i-1]
		get := func(name protoreflect.Name) protoreflect.Value { return m.Get(desc.Fields().ByName(name)) }
		list := func(name protoreflect.Name) []uint64 {
			l := get(name).List()
			var out []uint64
			for k := range l.Len() {
				out = append(out, l.Get(k).Uint())
			}
			return out
		}
		if get("id").Uint() != want.ID || get("name").String() != want.Name || int32(get("type").Enum()) != int32(want.Type) ||
			!slices.Equal(list("ctrl_deps"), want.CtrlDeps) || !slices.Equal(list("data_deps"), want.DataDeps) ||
			get("start_time_micros").Uint() != want.StartMicros || get("duration_micros").Uint() != want.DurationMicros {
			t.Errorf("node %d: the library reads %v", i-1, m)
		}
		attrs := get("attr").List()
		if attrs.Len() != len(want.Attrs) {
			t.Fatalf("node %d: %d attributes", i-1, attrs.Len())
		}
		for k := range attrs.Len() {
			a := attrs.Get(k).Message()
			ad := a.Descriptor()
			w := want.Attrs[k]
			set := a.WhichOneof(ad.Oneofs().ByName("value"))
			if set == nil || a.Get(ad.Fields().ByName("name")).String() != w.Name {
				t.Fatalf("node %d attribute %d: %v", i-1, k, a)
			}
			v := a.Get(set)
			var ok bool
			switch set.Name() {
			case "bool_val":
				ok = w.Kind == KindBool && v.Bool() == w.Bool
			case "int32_val", "int64_val":
				ok = (w.Kind == KindInt32 || w.Kind == KindInt64) && v.Int() == w.Int
			case "uint32_val", "uint64_val":
				ok = (w.Kind == KindUint32 || w.Kind == KindUint64) && v.Uint() == w.Uint
			case "double_val":
				ok = w.Kind == KindDouble && v.Float() == w.Float
			case "string_val":
				ok = w.Kind == KindString && v.String() == w.Str
			}
			if !ok {
				t.Errorf("node %d attribute %s: the library reads %s = %v, wrote %+v", i-1, w.Name, set.Name(), v, w)
			}
		}
	}
}
