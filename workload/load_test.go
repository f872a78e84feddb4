package workload

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var testdataLengths = []int{512, 2048, 131072, 17}

func TestReadTestdata(t *testing.T) {
	for _, file := range []string{"lengths.txt", "lengths.csv", "docs.jsonl"} {
		f, err := os.Open(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		if strings.HasSuffix(file, ".jsonl") {
			got, err = ReadJSONL(f, file, "num_tokens")
		} else {
			got, err = ReadLengths(f, file)
		}
		f.Close()
		if err != nil || !slices.Equal(got, testdataLengths) {
			t.Errorf("%s: got %v, %v; want %v", file, got, err, testdataLengths)
		}
	}
}

func TestReadLengths(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []int
	}{
		{"plain", "1\n2\n3", []int{1, 2, 3}},
		{"crlf and bom", "\xEF\xBB\xBF10\r\n20\r\n", []int{10, 20}},
		{"comments and blanks", "# header comment\n\n  # indented\n 5 \n\t\n1000000000\n", []int{5, 1000000000}},
		{"plus sign", "+7\n", []int{7}},
		{"csv one column", "length\n3\n4\n", []int{3, 4}},
		{"csv first column, upper case", "Length,name\n3,a\n4,\"b,c\"\n", []int{3, 4}},
		{"csv quoted and spaced", "a, LENGTH ,c\n1, 30 ,x\n# comment\n,,\n2,\"40\",y\r\n", []int{30, 40}},
		{"csv after comments", "# made by hand\n\nid,length\n0,9\n", []int{9}},
	} {
		got, err := ReadLengths(strings.NewReader(tc.in), tc.name)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

func TestReadLengthsErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "f.txt:1: no lengths"},
		{"# only\n\n", "f.txt:2: no lengths"},
		{"5\n\nabc\n", `f.txt:3: length "abc" is not an integer (allowed: an integer in [1, 1000000000])`},
		{"5\n12.5\n", `f.txt:2: length "12.5" is not an integer`},
		{"5\n0\n", "f.txt:2: length 0 out of range (allowed: [1, 1000000000])"},
		{"-3\n", "f.txt:1: length -3 out of range"},
		{"1000000001\n", "f.txt:1: length 1000000001 out of range"},
		{"99999999999999999999\n", `f.txt:1: length "99999999999999999999" out of range`},
		{"1,2\n", `f.txt:1: length "1,2" is not an integer`},
		{"id,name\n1,a\n", `f.txt:1: "id,name" is not an integer length, and as a CSV header it has no "length" column (columns: "id", "name")`},
		{"tokens\n", `no "length" column (columns: "tokens")`},
		{"length,length\n1,2\n", `f.txt:1: CSV header has two "length" columns`},
		{"id,length\n1,5\n2\n", `f.txt:3: record has 1 fields (allowed: 2, as in the header: "id", "length")`},
		{"id,length\n1,5\n2,5,6\n", "f.txt:3: record has 3 fields (allowed: 2"},
		{"# c\nid,length\n1,5\n\n2,x\n", `f.txt:5: column "length": length "x" is not an integer`},
		{"id,length\n1,0\n", `f.txt:2: column "length": length 0 out of range`},
		{"id,length\n", "f.txt:1: CSV header but no lengths"},
		{"id,length\n1,\"5\n", "f.txt:2: extraneous or missing \" in quoted-field"},
		{"length\n3\n" + `a"b` + "\n", "f.txt:3: bare \" in non-quoted-field"},
		{strings.Repeat("1", 2<<20), "f.txt:1: line longer than"},
	} {
		_, err := ReadLengths(strings.NewReader(tc.in), "f.txt")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadLengths(%.30q) error = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestReadJSONL(t *testing.T) {
	long := `{"text": "` + strings.Repeat("x", 3<<20) + `", "n": 4096}`
	for _, tc := range []struct {
		name, in string
		want     []int
	}{
		{"numbers", `{"n": 1}` + "\n" + `{"n": 4096.0}` + "\n" + `{"n": 4.096e3}`, []int{1, 4096, 4096}},
		{"blanks and crlf", "\n  \r\n{\"n\": 7}\r\n\n", []int{7}},
		{"long line", long + "\n" + `{"n":1}`, []int{4096, 1}},
		{"nested objects ignored", `{"a": {"n": 3}, "n": 5}`, []int{5}},
	} {
		got, err := ReadJSONL(strings.NewReader(tc.in), tc.name, "n")
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

func TestReadJSONLErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "d.jsonl:1: no records"},
		{"\n\n", "d.jsonl:2: no records"},
		{`{"n": 4096.5}`, `d.jsonl:1: field "n": length 4096.5 is not an integer`},
		{`{"n": "4096"}`, `d.jsonl:1: field "n": value "4096" is a string (allowed: an integral JSON number in [1, 1000000000])`},
		{`{"n": null}`, "is null"},
		{`{"n": true}`, "is a boolean"},
		{`{"n": [1]}`, "is an array"},
		{`{"n": {}}`, "is an object"},
		{`{"n": 0}`, "length 0 out of range (allowed: [1, 1000000000])"},
		{`{"n": -2.0}`, `length -2.0 out of range`},
		{`{"n": 1e400}`, `length 1e400 out of range`},
		{`{"n": 2e9}`, `length 2e9 out of range`},
		{"{\"n\": 1}\n{\"z\": 1, \"a\": 2, \"m\": 3}", `d.jsonl:2: no field "n" (keys present: "a", "m", "z")`},
		{"{\"n\": 1}\n[1, 2]", "d.jsonl:2: not a JSON object"},
		{"null", "d.jsonl:1: not a JSON object: null"},
		{`{"n": 1} {"n": 2}`, "d.jsonl:1: not a JSON object"},
		{`{"n": 1`, "d.jsonl:1: not a JSON object"},
	} {
		_, err := ReadJSONL(strings.NewReader(tc.in), "d.jsonl", "n")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadJSONL(%.30q) error = %v, want %q", tc.in, err, tc.want)
		}
	}
	if _, err := ReadJSONL(strings.NewReader(`{"n":1}`), "d.jsonl", ""); err == nil {
		t.Error("empty field name accepted")
	}
}

func checkLengths(t *testing.T, ls []int, err error) {
	if err != nil {
		return
	}
	if len(ls) == 0 {
		t.Fatal("no error and no lengths")
	}
	for i, l := range ls {
		if l < 1 || l > MaxSequenceTokens {
			t.Fatalf("lengths[%d] = %d outside [1, %d] without an error", i, l, MaxSequenceTokens)
		}
	}
}

func FuzzReadLengths(f *testing.F) {
	for _, s := range []string{
		"1\n2\n3\n", "# c\n\n5\n", "length\n3\n", "a,length\n1,2\n\"x\",\"3\"\n", "id,name\n", "\xEF\xBB\xBF7\r\n",
		"0\n", "-1\n", "1e3\n", "length\n\"", "length,b\n1\n", "99999999999999999999999\n",
	} {
		f.Add([]byte(s))
	}
	if data, err := os.ReadFile(filepath.Join("testdata", "lengths.csv")); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ls, err := ReadLengths(bytes.NewReader(data), "fuzz")
		checkLengths(t, ls, err)
	})
}

func FuzzReadJSONL(f *testing.F) {
	for _, s := range []string{
		`{"n": 1}`, "{\"n\": 4096.0}\n\n{\"n\": 2}", `{"n": 4096.5}`, `{"n": "7"}`, `{"m": 1}`, "null", "[]",
		`{"n": 1e400}`, `{"n": -0.0}`, `{"n": 1`, "\xEF\xBB\xBF{\"n\":3}",
	} {
		f.Add([]byte(s), "n")
	}
	f.Fuzz(func(t *testing.T, data []byte, field string) {
		ls, err := ReadJSONL(bytes.NewReader(data), "fuzz", field)
		checkLengths(t, ls, err)
	})
}
