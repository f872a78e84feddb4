package milp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
)

// termsPerLine is how many terms one LP line holds before the expression
// continues on the next (readers bound line lengths; CBC's to a few hundred
// characters).
const termsPerLine = 6

// WriteLP writes the model in CPLEX LP format: a comment with the model's
// name, the objective (row "obj"), the constraints, the bounds that differ
// from [0, +Inf), and the General and Binary sections. Terms naming the same
// variable are summed, zero coefficients dropped (an expression left empty
// is written as 0 times the first variable). Numbers are written exactly
// (shortest round-trip decimal). The model must pass Check and hold at least
// one variable; the text is deterministic.
func (m *Model) WriteLP(w io.Writer) error {
	if err := m.Check(); err != nil {
		return err
	}
	if len(m.vars) == 0 {
		return errors.New("milp: a model without variables has no LP text")
	}
	bw := bufio.NewWriter(w)
	name := m.Name
	if name == "" {
		name = "model"
	}
	fmt.Fprintf(bw, "\\ %s: %d variables (%d integer), %d constraints\n", sanitizeComment(name), len(m.vars), m.NumIntegers(), len(m.cons))
	if m.max {
		bw.WriteString("Maximize\n")
	} else {
		bw.WriteString("Minimize\n")
	}
	m.writeExpr(bw, "obj", m.obj)
	bw.WriteString("\n")
	if len(m.cons) > 0 {
		bw.WriteString("Subject To\n")
		for _, c := range m.cons {
			m.writeExpr(bw, c.Name, c.Terms)
			fmt.Fprintf(bw, " %s %s\n", c.Sense, num(c.RHS))
		}
	}
	var bounds, general, binary []string
	for _, v := range m.vars {
		switch {
		case v.Kind == Binary:
			binary = append(binary, v.Name)
			continue
		case v.Lower == v.Upper:
			bounds = append(bounds, fmt.Sprintf(" %s = %s", v.Name, num(v.Lower)))
		case math.IsInf(v.Upper, 1) && v.Lower != 0:
			bounds = append(bounds, fmt.Sprintf(" %s >= %s", v.Name, num(v.Lower)))
		case !math.IsInf(v.Upper, 1):
			bounds = append(bounds, fmt.Sprintf(" %s <= %s <= %s", num(v.Lower), v.Name, num(v.Upper)))
		}
		if v.Kind == Integer {
			general = append(general, v.Name)
		}
	}
	if len(bounds) > 0 {
		bw.WriteString("Bounds\n")
		for _, b := range bounds {
			bw.WriteString(b + "\n")
		}
	}
	writeNames(bw, "General", general)
	writeNames(bw, "Binary", binary)
	bw.WriteString("End\n")
	return bw.Flush()
}

// writeExpr writes " name: c1 x1 + c2 x2 ..." (no line end), merging terms
// of one variable in the order they first appear and dropping zeros.
func (m *Model) writeExpr(w *bufio.Writer, name string, terms []Term) {
	coef := map[Var]float64{}
	var order []Var
	for _, t := range terms {
		if _, ok := coef[t.Var]; !ok {
			order = append(order, t.Var)
		}
		coef[t.Var] += t.Coef
	}
	order = slices.DeleteFunc(order, func(v Var) bool { return coef[v] == 0 })
	fmt.Fprintf(w, " %s:", name)
	if len(order) == 0 {
		fmt.Fprintf(w, " 0 %s", m.vars[0].Name)
		return
	}
	for i, v := range order {
		if i > 0 && i%termsPerLine == 0 {
			w.WriteString("\n  ")
		}
		c := coef[v]
		sign := "+"
		if c < 0 {
			sign, c = "-", -c
		}
		if i == 0 && sign == "+" {
			fmt.Fprintf(w, " %s %s", num(c), m.vars[v].Name)
		} else {
			fmt.Fprintf(w, " %s %s %s", sign, num(c), m.vars[v].Name)
		}
	}
}

// writeNames writes a General or Binary section, a few names per line.
func writeNames(w *bufio.Writer, section string, names []string) {
	if len(names) == 0 {
		return
	}
	w.WriteString(section + "\n")
	for i := 0; i < len(names); i += 8 {
		w.WriteString(" ")
		for j, n := range names[i:min(i+8, len(names))] {
			if j > 0 {
				w.WriteString(" ")
			}
			w.WriteString(n)
		}
		w.WriteString("\n")
	}
}

// num writes a finite float exactly, in the shortest form that reads back to
// it; exponents keep their sign and at least two digits ("1e-05"), which LP
// readers take.
func num(x float64) string {
	if x == 0 {
		return "0" // never "-0"
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// sanitizeComment keeps a comment on one line.
func sanitizeComment(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < ' ' || c == 0x7f {
			b[i] = ' '
		}
	}
	return string(b)
}
