package pages

// Chart is a scatter chart drawn in the browser from its data: points in
// series (hover names each), lines, and horizontal rules.
type Chart struct {
	// ID is the chart's id in the page; Title its heading; Caption what
	// it shows.
	ID, Title, Caption string
	// Data is what the script draws.
	Data ChartData
}

// ChartData is a chart as its script reads it (JSON).
type ChartData struct {
	// XLabel and YLabel name the axes; XLog puts x on a log scale.
	XLabel string `json:"xLabel"`
	YLabel string `json:"yLabel"`
	XLog   bool   `json:"xLog"`
	// Series are the points, one colour each; Lines are drawn over them;
	// Rules are horizontal lines across the chart.
	Series []Series `json:"series"`
	Lines  []Line   `json:"lines"`
	Rules  []Rule   `json:"rules"`
}

// Series is a set of points in one colour (a CSS colour).
type Series struct {
	Name   string  `json:"name"`
	Color  string  `json:"color"`
	Points []Point `json:"points"`
}

// Point is a point and what hover says of it.
type Point struct {
	X     float64 `json:"x"`
	Y     float64 `json:"y"`
	Label string  `json:"label"`
}

// Line is a polyline through points in order, solid or dashed.
type Line struct {
	Name   string  `json:"name"`
	Color  string  `json:"color"`
	Dashed bool    `json:"dashed"`
	Points []Point `json:"points"`
}

// Rule is a horizontal line at Y, labelled.
type Rule struct {
	Y     float64 `json:"y"`
	Label string  `json:"label"`
	Color string  `json:"color"`
}
