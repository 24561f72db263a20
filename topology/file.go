package topology

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Document is the JSON/YAML form of a topology. Either Spec names a
// generated network, or Nodes and Links describe one explicitly (the form
// `icn topo export --format json` writes). Failures are optional in both.
type Document struct {
	Format      string         `json:"format,omitempty" yaml:"format,omitempty"`
	Name        string         `json:"name,omitempty" yaml:"name,omitempty"`
	Spec        string         `json:"spec,omitempty" yaml:"spec,omitempty"`
	Dims        []int          `json:"dims,omitempty" yaml:"dims,omitempty"`
	Wrap        []bool         `json:"wrap,omitempty" yaml:"wrap,omitempty"`
	Nodes       []DocNode      `json:"nodes,omitempty" yaml:"nodes,omitempty"`
	Links       []DocLink      `json:"links,omitempty" yaml:"links,omitempty"`
	FailedLinks []string       `json:"failed_links,omitempty" yaml:"failed_links,omitempty"`
	FailedNodes []string       `json:"failed_nodes,omitempty" yaml:"failed_nodes,omitempty"`
	Extra       map[string]any `json:"-" yaml:"-"`
}

// DocNode is one node of a Document.
type DocNode struct {
	Name  string `json:"name" yaml:"name"`
	Kind  string `json:"kind" yaml:"kind"`
	GUID  string `json:"guid,omitempty" yaml:"guid,omitempty"`
	Ports int    `json:"ports,omitempty" yaml:"ports,omitempty"`
	Level *int   `json:"level,omitempty" yaml:"level,omitempty"`
	Group *int   `json:"group,omitempty" yaml:"group,omitempty"`
	Coord []int  `json:"coord,omitempty" yaml:"coord,omitempty"`
	LID   int    `json:"lid,omitempty" yaml:"lid,omitempty"`
	Desc  string `json:"desc,omitempty" yaml:"desc,omitempty"`
}

// DocLink is one duplex link of a Document; A and B are node names.
type DocLink struct {
	A         string  `json:"a" yaml:"a"`
	APort     int     `json:"a_port" yaml:"a_port"`
	B         string  `json:"b" yaml:"b"`
	BPort     int     `json:"b_port" yaml:"b_port"`
	Dim       *int    `json:"dim,omitempty" yaml:"dim,omitempty"`
	Class     string  `json:"class,omitempty" yaml:"class,omitempty"`
	Bandwidth float64 `json:"bandwidth,omitempty" yaml:"bandwidth,omitempty"`
}

// DocumentFormat is the format tag written into exported documents.
const DocumentFormat = "icn-topology/1"

// ToDocument returns the explicit document form of g.
func (g *Graph) ToDocument() *Document {
	d := &Document{Format: DocumentFormat, Name: g.name, Dims: g.dims, Wrap: g.wrap}
	d.Nodes = make([]DocNode, g.NumNodes())
	for v := range d.Nodes {
		n := DocNode{Name: g.names[v], Kind: g.kinds[v].String(), GUID: fmt.Sprintf("0x%016x", g.guids[v]), Ports: int(g.nport[v])}
		if l := int(g.level[v]); l >= 0 {
			n.Level = &l
		}
		if gr := int(g.group[v]); gr >= 0 {
			n.Group = &gr
		}
		n.Coord = g.Coord(v)
		n.LID = g.LID(v)
		n.Desc = g.Desc(v)
		d.Nodes[v] = n
	}
	d.Links = make([]DocLink, g.NumLinks())
	for l, lk := range g.links {
		dl := DocLink{A: g.names[lk.A], APort: int(lk.APort), B: g.names[lk.B], BPort: int(lk.BPort),
			Class: lk.Class.String(), Bandwidth: float64(lk.Bandwidth)}
		if lk.Dim >= 0 {
			dim := int(lk.Dim)
			dl.Dim = &dim
		}
		d.Links[l] = dl
	}
	for _, l := range g.FailedLinks() {
		d.FailedLinks = append(d.FailedLinks, g.LinkName(l))
	}
	for _, v := range g.FailedNodes() {
		d.FailedNodes = append(d.FailedNodes, g.names[v])
	}
	return d
}

// WriteJSON writes g as an explicit JSON document.
func (g *Graph) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(g.ToDocument())
}

// ParseJSON reads a JSON document (spec form or explicit form).
func ParseJSON(data []byte, name string) (*Graph, error) {
	var d Document
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("%s: invalid topology JSON: %v", name, err)
	}
	return d.Graph(name)
}

// ParseYAML reads a YAML document with the same fields as the JSON form.
func ParseYAML(data []byte, name string) (*Graph, error) {
	var d Document
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("%s: invalid topology YAML: %v", name, oneLineErr(err))
	}
	return d.Graph(name)
}

func oneLineErr(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// Graph builds the graph a document describes.
func (d *Document) Graph(name string) (*Graph, error) {
	if d.Format != "" && d.Format != DocumentFormat {
		return nil, fmt.Errorf("%s: unsupported document format %q (want %q)", name, d.Format, DocumentFormat)
	}
	var g *Graph
	var err error
	switch {
	case d.Spec != "" && len(d.Nodes) > 0:
		return nil, fmt.Errorf("%s: give either spec or nodes/links, not both", name)
	case d.Spec != "":
		if strings.HasPrefix(strings.TrimSpace(d.Spec), "file:") {
			return nil, fmt.Errorf("%s: a document's spec may not refer to another file", name)
		}
		if g, err = Parse(d.Spec); err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
	case len(d.Nodes) > 0:
		if g, err = d.explicit(name); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%s: document has neither spec nor nodes", name)
	}
	if len(d.FailedLinks) > 0 || len(d.FailedNodes) > 0 {
		links, err := g.ParseLinks(strings.Join(d.FailedLinks, ","))
		if err != nil {
			return nil, fmt.Errorf("%s: failed_links: %v", name, err)
		}
		nodes, err := g.ParseNodes(strings.Join(d.FailedNodes, ","))
		if err != nil {
			return nil, fmt.Errorf("%s: failed_nodes: %v", name, err)
		}
		if g, err = g.AddFaults(links, nodes); err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
	}
	return g, nil
}

func (d *Document) explicit(name string) (*Graph, error) {
	title := d.Name
	if title == "" {
		title = name
	}
	b := NewBuilder(title)
	if err := d.setDims(b, name); err != nil {
		return nil, err
	}
	idx, err := d.addNodes(b, name)
	if err != nil {
		return nil, err
	}
	if err := d.addLinks(b, idx, name); err != nil {
		return nil, err
	}
	g, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return g, nil
}

// setDims checks the document's dimensions and wrap flags and gives them
// to b.
func (d *Document) setDims(b *Builder, name string) error {
	if len(d.Dims) == 0 {
		return nil
	}
	if len(d.Wrap) != len(d.Dims) {
		return fmt.Errorf("%s: dims and wrap must have the same length", name)
	}
	for i, x := range d.Dims {
		if x < 1 || x > 1<<15-1 {
			return fmt.Errorf("%s: dimension %d has size %d", name, i, x)
		}
	}
	b.SetDims(d.Dims, d.Wrap)
	return nil
}

// addNodes adds the document's nodes to b and returns their indices by
// name.
func (d *Document) addNodes(b *Builder, name string) (map[string]int, error) {
	idx := make(map[string]int, len(d.Nodes))
	for i, n := range d.Nodes {
		k, err := ParseKind(n.Kind)
		if err != nil {
			return nil, fmt.Errorf("%s: node %d: %v", name, i, err)
		}
		if n.Name == "" {
			return nil, fmt.Errorf("%s: node %d has no name", name, i)
		}
		if _, dup := idx[n.Name]; dup {
			return nil, fmt.Errorf("%s: duplicate node name %q", name, n.Name)
		}
		o, err := d.nodeOpts(n, name)
		if err != nil {
			return nil, err
		}
		idx[n.Name] = b.AddNode(k, n.Name, o)
	}
	return idx, nil
}

// nodeOpts checks one node's ports, GUID, LID, level, group and
// coordinates and converts them to NodeOpts.
func (d *Document) nodeOpts(n DocNode, name string) (NodeOpts, error) {
	o := NodeOpts{Level: NoLevel, Group: NoGroup, Ports: n.Ports}
	if n.Ports < 0 || n.Ports > MaxPorts {
		return o, fmt.Errorf("%s: node %q has %d ports", name, n.Name, n.Ports)
	}
	if n.GUID != "" {
		v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(n.GUID), "0x"), 16, 64)
		if err != nil || v == 0 {
			return o, fmt.Errorf("%s: node %q has invalid GUID %q", name, n.Name, n.GUID)
		}
		o.GUID = v
	}
	if n.LID < 0 || n.LID > MaxUnicastLID {
		return o, fmt.Errorf("%s: node %q LID %d outside 1..%d", name, n.Name, n.LID, MaxUnicastLID)
	}
	o.LID = n.LID
	if strings.ContainsAny(n.Desc, "\"\n") {
		return o, fmt.Errorf("%s: node %q description %q contains a quote or a new line", name, n.Name, n.Desc)
	}
	o.Desc = n.Desc
	if n.Level != nil {
		if *n.Level < 0 || *n.Level > 127 {
			return o, fmt.Errorf("%s: node %q level %d out of range", name, n.Name, *n.Level)
		}
		o.Level = *n.Level
	}
	if n.Group != nil {
		if *n.Group < 0 {
			return o, fmt.Errorf("%s: node %q group %d out of range", name, n.Name, *n.Group)
		}
		o.Group = *n.Group
	}
	if len(d.Dims) > 0 {
		if len(n.Coord) != len(d.Dims) {
			return o, fmt.Errorf("%s: node %q needs %d coordinates", name, n.Name, len(d.Dims))
		}
		o.Coord = n.Coord
	} else if len(n.Coord) > 0 {
		return o, fmt.Errorf("%s: node %q has coordinates but the document has no dims", name, n.Name)
	}
	return o, nil
}

// addLinks connects the document's links in b, naming ends through idx.
func (d *Document) addLinks(b *Builder, idx map[string]int, name string) error {
	for i, l := range d.Links {
		a, ok := idx[l.A]
		if !ok {
			return fmt.Errorf("%s: link %d names unknown node %q", name, i, l.A)
		}
		c, ok := idx[l.B]
		if !ok {
			return fmt.Errorf("%s: link %d names unknown node %q", name, i, l.B)
		}
		o, err := linkOpts(l, i, name)
		if err != nil {
			return err
		}
		b.ConnectPorts(a, l.APort, c, l.BPort, o)
	}
	return nil
}

// linkOpts checks link i's dimension, class, bandwidth and ports and
// converts them to LinkOpts.
func linkOpts(l DocLink, i int, name string) (LinkOpts, error) {
	o := LinkOpts{Dim: -1, Bandwidth: l.Bandwidth}
	if l.Dim != nil {
		if *l.Dim < 0 || *l.Dim > 127 {
			return o, fmt.Errorf("%s: link %d dim %d out of range", name, i, *l.Dim)
		}
		o.Dim = *l.Dim
	}
	if l.Class != "" {
		cl, err := ParseClass(l.Class)
		if err != nil {
			return o, fmt.Errorf("%s: link %d: %v", name, i, err)
		}
		o.Class = cl
	}
	if l.Bandwidth < 0 || l.Bandwidth > 1e9 {
		return o, fmt.Errorf("%s: link %d bandwidth %g out of range", name, i, l.Bandwidth)
	}
	if l.APort < 1 || l.BPort < 1 || l.APort > MaxPorts || l.BPort > MaxPorts {
		return o, fmt.Errorf("%s: link %d uses port %d/%d; ports are numbered from 1", name, i, l.APort, l.BPort)
	}
	return o, nil
}

// WriteDOT writes g in Graphviz DOT: switches as boxes, failed links dashed
// red, global links bold.
func (g *Graph) WriteDOT(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "graph %q {\n  node [shape=circle,fontsize=9];\n", g.name)
	for v := range g.kinds {
		attrs := ""
		if g.kinds[v] == Switch {
			attrs = " [shape=box]"
		}
		if g.NodeFailed(v) {
			attrs = strings.TrimSuffix(attrs, "]")
			if attrs == "" {
				attrs = " ["
			} else {
				attrs += ","
			}
			attrs += "color=red,style=dashed]"
		}
		fmt.Fprintf(&b, "  n%d [label=%q]%s;\n", v, g.names[v], strings.TrimPrefix(attrs, ""))
	}
	for l, lk := range g.links {
		var attrs []string
		attrs = append(attrs, fmt.Sprintf("taillabel=\"%d\",headlabel=\"%d\"", lk.APort, lk.BPort))
		if lk.Class == Global {
			attrs = append(attrs, "style=bold")
		}
		if g.LinkFailed(l) {
			attrs = append(attrs, "color=red,style=dashed")
		}
		fmt.Fprintf(&b, "  n%d -- n%d [%s];\n", lk.A, lk.B, strings.Join(attrs, ","))
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}
