package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"trueup/fault"
	"trueup/sqlfile"
)

// A dbt project's generic tests become rule files: the manifest (target/manifest.json, which
// `dbt parse` writes) lists every test node with its test_metadata — the test's name, its
// package and its arguments — and the model it is attached to. Tests that map onto a kind
// become one block each of a file per model; the others are listed with the reason, and
// nothing is written for them.

// DBTImport is what a dbt manifest's tests become.
type DBTImport struct {
	Files    []DBTFile
	Unmapped []DBTUnmapped
}

// DBTFile is one rule file: the rules on one model.
type DBTFile struct {
	Path  string // relative to the rules folder: <model>/dbt.sql
	Text  string
	Rules []string
}

// DBTUnmapped is a test that has no trueup rule, and why.
type DBTUnmapped struct {
	Test   string // the test's unique_id
	Reason string
}

type dbtManifest struct {
	Nodes   map[string]dbtNode
	Sources map[string]dbtNode
	// unreadable are the tests whose entries do not read (a field of another type than dbt
	// writes), each with why: they are listed as not imported, and the others come over.
	unreadable map[string]string
	// schemas are the schemas each relation name stands in: a name in two is written with its
	// schema (staging.customers and marts.customers), any other without (a manifest written
	// by a developer's `dbt parse` names the developer's schema).
	schemas map[string]map[string]bool
}

type dbtNode struct {
	UniqueID     string `json:"unique_id"`
	ResourceType string `json:"resource_type"`
	Name         string `json:"name"`
	Alias        string `json:"alias"`
	Identifier   string `json:"identifier"`
	Schema       string `json:"schema"`
	Version      any    `json:"version"`
	ColumnName   string `json:"column_name"`
	AttachedNode string `json:"attached_node"`
	TestMetadata *struct {
		Name      string         `json:"name"`
		Namespace string         `json:"namespace"`
		Kwargs    map[string]any `json:"kwargs"`
	} `json:"test_metadata"`
	DependsOn struct {
		Nodes []string `json:"nodes"`
	} `json:"depends_on"`
	Tags   []string `json:"tags"`
	Config struct {
		Severity string `json:"severity"`
		Where    string `json:"where"`
		WarnIf   string `json:"warn_if"`
		ErrorIf  string `json:"error_if"`
		FailCalc string `json:"fail_calc"`
	} `json:"config"`
}

// name is the table a model or a source is named as: its alias (or identifier), else its name.
func (n dbtNode) name() string {
	switch {
	case n.Alias != "":
		return n.Alias
	case n.Identifier != "":
		return n.Identifier
	}
	return n.Name
}

// relation is the table a model or a source is read as: its name, with its schema where
// another schema has a relation of that name too.
func (m *dbtManifest) relation(n dbtNode) string {
	if len(m.schemas[n.name()]) > 1 && n.Schema != "" {
		return quoteName(n.Schema) + "." + quoteName(n.name())
	}
	return n.name()
}

// ImportDBT maps the generic tests of a dbt manifest onto rules; shown names the manifest in
// messages. A manifest that does not parse is a fault.Invalid, as shown:line: message.
func ImportDBT(shown string, manifest []byte) (*DBTImport, error) {
	m, unitTests, err := readManifest(shown, manifest)
	if err != nil {
		return nil, err
	}
	var ids []string
	for id, n := range m.Nodes {
		if n.ResourceType == "test" {
			ids = append(ids, id)
		}
	}
	for id := range m.unreadable {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	type block struct{ name, text string }
	byModel := map[string][]block{}
	tables := map[string]string{}
	out := &DBTImport{}
	for _, id := range ids {
		if why, ok := m.unreadable[id]; ok {
			out.Unmapped = append(out.Unmapped, DBTUnmapped{id, why})
			continue
		}
		n := m.Nodes[id]
		model, r, reason := m.mapTest(id, n)
		table := m.relation(model)
		if reason == "" {
			// what is written must load as written: parse it alone, with its table
			if _, err := Parse("dbt.sql", "-- table: "+table+"\n"+r); err != nil {
				reason = "its rule would not load: " + fault.FirstLine(err.Error())
			}
		}
		if reason != "" {
			out.Unmapped = append(out.Unmapped, DBTUnmapped{id, reason})
			continue
		}
		// One folder a model; two relations of one model's name (its versions, or one name in
		// two schemas) each get the folder of the relation's name, else of schema and name.
		key, keys := model.Name, []string{model.Name, model.name(), model.Schema + "_" + model.name()}
		if model.Version != nil {
			keys = keys[1:] // each version of a model under its own name (orders_v1, orders_v2)
		}
		for _, k := range keys {
			if prev, ok := tables[k]; !ok || prev == table {
				key = k
				break
			}
		}
		tables[key] = table
		byModel[key] = append(byModel[key], block{n.Name, r})
	}
	for _, id := range unitTests {
		out.Unmapped = append(out.Unmapped, DBTUnmapped{id, "a unit test (given rows in, expected rows out): trueup checks the tables themselves"})
	}
	models := make([]string, 0, len(byModel))
	for k := range byModel {
		models = append(models, k)
	}
	sort.Strings(models)
	for _, k := range models {
		var b strings.Builder
		f := DBTFile{Path: path.Join(k, "dbt.sql")}
		for i, bl := range byModel[k] {
			if i > 0 {
				b.WriteString(Separator + "\n")
			}
			// the first rule names the table, the others take it from there
			head, rest, _ := strings.Cut(bl.text, "\n")
			b.WriteString(head + "\n")
			if i == 0 {
				b.WriteString("-- table: " + tables[k] + "\n")
			}
			b.WriteString(rest)
			f.Rules = append(f.Rules, bl.name)
		}
		f.Text = b.String()
		out.Files = append(out.Files, f)
	}
	return out, nil
}

// mapTest returns the model a test checks and the header of its rule (the rule: line first,
// without table:), or why it has none.
func (m *dbtManifest) mapTest(id string, n dbtNode) (dbtNode, string, string) {
	if n.TestMetadata == nil {
		return dbtNode{}, "", "a singular test (a SELECT of its own): write it as kind: custom"
	}
	model, ok := m.node(n.AttachedNode)
	if !ok {
		// Before dbt 1.5 a test has no attached_node: the model is the one its model argument
		// refs ({{ get_where_subquery(ref('orders')) }}); depends_on lists a relationships
		// test's parent first.
		model, ok = m.modelOf(n)
	}
	if !ok {
		return dbtNode{}, "", "the model it tests is not in the manifest"
	}
	if !sqlfile.ValidName(n.Name) {
		return dbtNode{}, "", fmt.Sprintf("its name %q is not a rule name (%s)", n.Name, sqlfile.NameChars)
	}
	t := n.TestMetadata
	kw := dbtKwargs(t.Kwargs)
	if s := kw.jinja(); s != "" {
		return dbtNode{}, "", fmt.Sprintf("argument %s is Jinja, which only dbt can render", s)
	}
	if isJinja(n.Config.Where) {
		return dbtNode{}, "", "its where: config is Jinja, which only dbt can render"
	}
	if fc := strings.Join(strings.Fields(strings.ToLower(n.Config.FailCalc)), ""); fc != "" && fc != "count(*)" {
		return dbtNode{}, "", fmt.Sprintf("fail_calc %q: a rule counts its failing rows (or keys, groups, partitions) as dbt's default count(*) does", n.Config.FailCalc)
	}
	col := n.ColumnName
	if col == "" {
		col = kw.str("column_name")
	}
	col = dbtName(col)     // dbt writes a column with quote: true quoted
	name := quoteName(col) // a column whose name holds a space, as the rule headers take it
	w := &dbtRule{}
	w.key("rule", n.Name)
	full := t.Name
	if t.Namespace != "" {
		full = t.Namespace + "." + t.Name
	}
	where := n.Config.Where
	if rc := kw.str("row_condition"); rc != "" {
		where = andWhere(where, rc)
	}
	var reason string
	switch full {
	case "unique", "dbt_expectations.expect_column_values_to_be_unique":
		w.key("kind", "uniqueness")
		w.key("columns", name)
	case "not_null", "dbt_expectations.expect_column_values_to_not_be_null":
		w.key("kind", "completeness")
		w.key("not_null", name)
	case "accepted_values", "dbt_expectations.expect_column_values_to_be_in_set":
		list, quote := kw.list("values"), kw.boolean("quote", true)
		if full != "accepted_values" {
			list, quote = kw.list("value_set"), kw.boolean("quote_values", true)
		}
		vals, why := sqlValues(list, quote)
		if why != "" {
			return dbtNode{}, "", why
		}
		w.key("kind", "accepted_values")
		w.key("column", name)
		w.key("values", vals)
	case "relationships":
		parent, ok := m.parent(n, model, "to")
		if !ok {
			return dbtNode{}, "", fmt.Sprintf("its parent %s is not a model or source of the manifest", kw.str("to"))
		}
		w.key("kind", "relationships")
		w.key("column", name)
		w.key("parent", m.relation(parent))
		w.key("parent_column", quoteName(dbtName(kw.str("field"))))
	case "dbt_utils.unique_combination_of_columns":
		w.key("kind", "uniqueness")
		w.key("columns", quoteNames(kw.names("combination_of_columns")))
		w.key("nulls", "equal")
	case "dbt_utils.accepted_range", "dbt_expectations.expect_column_values_to_be_between":
		w.key("kind", "accepted_range")
		w.key("column", name)
		w.key("min", kw.str("min_value"))
		w.key("max", kw.str("max_value"))
		if full == "dbt_utils.accepted_range" && !kw.boolean("inclusive", true) || kw.boolean("strictly", false) {
			w.key("inclusive", "false")
		}
	case "dbt_utils.expression_is_true":
		expr := kw.str("expression")
		if col != "" {
			expr = name + " " + expr // SQL: a quoted name reads as one column in both engines
		}
		w.key("kind", "expression")
		w.key("expression", expr)
	case "dbt_utils.not_constant":
		if len(kw.list("group_by_columns")) > 0 {
			return dbtNode{}, "", "group_by_columns: not_constant checks the table, or each partition: (one column), not each group"
		}
		w.key("kind", "not_constant")
		w.key("column", name)
	case "dbt_expectations.expect_column_values_to_match_regex", "dbt_expectations.expect_column_values_to_not_match_regex":
		if f := kw.str("flags"); f != "" {
			return dbtNode{}, "", fmt.Sprintf("regex flags %q: trueup's pattern takes RE2 without flags (write them inline, (?i))", f)
		}
		w.key("kind", "pattern")
		w.key("column", name)
		w.key("regex", kw.str("regex"))
		if strings.Contains(full, "not_match") {
			w.key("negate", "true")
		}
	case "dbt_expectations.expect_table_row_count_to_be_between":
		if len(kw.list("group_by")) > 0 {
			return dbtNode{}, "", "group_by: row_count counts per partition: (one column), not per group"
		}
		w.key("kind", "row_count")
		w.key("min", kw.str("min_value"))
		w.key("max", kw.str("max_value"))
		if kw.boolean("strictly", false) {
			w.key("inclusive", "false")
		}
	case "dbt_utils.recency":
		age, why := dbtAge(kw.str("datepart"), kw.str("interval"))
		if why != "" {
			return dbtNode{}, "", why
		}
		w.key("kind", "freshness")
		w.key("column", quoteName(dbtName(kw.str("field"))))
		w.key("max_age", age)
		w.key("group_by", quoteNames(kw.names("group_by_columns")))
	case "dbt_utils.equal_rowcount", "dbt_utils.fewer_rows_than":
		if len(kw.list("group_by_columns")) > 0 {
			return dbtNode{}, "", "group_by_columns: row_count compares per partition: (one column), not per group"
		}
		other, why := m.compareTo(n, model)
		if why != "" {
			return dbtNode{}, "", why
		}
		w.key("kind", "row_count")
		w.key("compare_to", other)
		if full == "dbt_utils.fewer_rows_than" {
			w.key("max", "compare_to") // strictly fewer: dbt-utils fails the same number of rows
			w.key("inclusive", "false")
		}
	case "dbt_utils.equality":
		if len(kw.list("exclude_columns")) > 0 {
			return dbtNode{}, "", "exclude_columns: equality compares the columns it lists (columns:), name them instead"
		}
		if kw.str("precision") != "" {
			return dbtNode{}, "", "precision: equality compares floats at 6 decimal places, not at a chosen precision"
		}
		other, why := m.compareTo(n, model)
		if why != "" {
			return dbtNode{}, "", why
		}
		w.key("kind", "equality")
		w.key("compare_to", other)
		w.key("columns", quoteNames(kw.names("compare_columns")))
	default:
		reason = fmt.Sprintf("test %s has no trueup kind", full)
	}
	if reason != "" {
		return dbtNode{}, "", reason
	}
	w.key("where", where)
	switch strings.ToLower(n.Config.Severity) {
	case "warn":
		w.key("severity", "warn")
	}
	if v := n.Config.WarnIf; v != "" && v != "!= 0" {
		w.key("warn_if", v)
	}
	if v := n.Config.ErrorIf; v != "" && v != "!= 0" {
		w.key("error_if", v)
	}
	w.key("tags", strings.Join(n.Tags, ", "))
	w.key("description", "dbt test "+id)
	return model, w.String(), ""
}

func (m *dbtManifest) node(id string) (dbtNode, bool) {
	if n, ok := m.Nodes[id]; ok && n.ResourceType != "test" {
		return n, true
	}
	if n, ok := m.Sources[id]; ok {
		return n, true
	}
	return dbtNode{}, false
}

// compareTo is the relation test n's compare_model names, or why there is none.
func (m *dbtManifest) compareTo(n, model dbtNode) (string, string) {
	other, ok := m.parent(n, model, "compare_model")
	if !ok {
		return "", fmt.Sprintf("its compare_model %s is not a model or source of the manifest", dbtKwargs(n.TestMetadata.Kwargs).str("compare_model"))
	}
	return m.relation(other), ""
}

// parent is the other node a relationships test depends on (to: names it by ref or source).
func (m *dbtManifest) parent(n dbtNode, model dbtNode, arg string) (dbtNode, bool) {
	to := dbtKwargs(n.TestMetadata.Kwargs).str(arg)
	want := ""
	if sm := refRe.FindStringSubmatch(to); sm != nil {
		want = sm[len(sm)-1]
	}
	var others []dbtNode
	for _, id := range n.DependsOn.Nodes {
		if p, ok := m.node(id); ok && id != n.AttachedNode && (n.AttachedNode != "" || m.relation(p) != m.relation(model)) {
			if p.Name == want {
				return p, true
			}
			others = append(others, p)
		}
	}
	if len(others) == 1 {
		return others[0], true
	}
	if want == model.Name {
		return model, true // a table that refers to itself
	}
	return dbtNode{}, false
}

var refRe = regexp.MustCompile(`(?:ref|source)\(\s*(?:['"][^'"]+['"]\s*,\s*)?['"]([^'"]+)['"]\s*\)`)

// dbtRule writes header lines, leaving out empty values.
type dbtRule struct{ b strings.Builder }

func (w *dbtRule) key(k, v string) {
	if v = strings.TrimSpace(strings.ReplaceAll(v, "\n", " ")); v != "" {
		fmt.Fprintf(&w.b, "-- %s: %s\n", k, v)
	}
}

func (w *dbtRule) String() string { return w.b.String() }

type dbtKwargs map[string]any

func (k dbtKwargs) str(name string) string {
	switch v := k[name].(type) {
	case string:
		return v
	case json.Number: // as dbt wrote it: 9007199254740993 stays itself
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}

func (k dbtKwargs) boolean(name string, def bool) bool {
	if v, ok := k[name].(bool); ok {
		return v
	}
	return def
}

func (k dbtKwargs) list(name string) []string {
	raw, _ := k[name].([]any)
	var out []string
	for _, x := range raw {
		out = append(out, dbtKwargs{"x": x}.str("x"))
	}
	return out
}

// names is list of column names, as a rule header takes them (dbtName).
func (k dbtKwargs) names(name string) []string {
	out := k.list(name)
	for i, n := range out {
		out[i] = dbtName(n)
	}
	return out
}

// dbtName is a column name as dbt gives it, without the quotes dbt puts around a column whose
// quote: is true ("Order Note", `Order Note` on adapters that quote so).
func dbtName(s string) string {
	if u, ok := unquoteName(s); ok {
		return u
	}
	if len(s) >= 3 && s[0] == '`' && s[len(s)-1] == '`' && !strings.Contains(s[1:len(s)-1], "`") {
		return s[1 : len(s)-1]
	}
	return s
}

// jinja names an argument dbt would render (a {{ … }} inside it); model is always one.
func (k dbtKwargs) jinja() string {
	for name, v := range k {
		if s, ok := v.(string); ok && name != "model" && isJinja(s) {
			return name
		}
	}
	return ""
}

// isJinja reports whether s holds a Jinja expression or statement, which only dbt renders.
func isJinja(s string) bool { return strings.Contains(s, "{{") || strings.Contains(s, "{%") }

// modelOf is the model a test without attached_node checks: the node its model argument refs,
// among those it depends on, else the last it depends on.
func (m *dbtManifest) modelOf(n dbtNode) (dbtNode, bool) {
	want := ""
	if sm := refRe.FindStringSubmatch(dbtKwargs(n.TestMetadata.Kwargs).str("model")); sm != nil {
		want = sm[len(sm)-1]
	}
	for _, id := range n.DependsOn.Nodes {
		if p, ok := m.node(id); ok && p.Name == want {
			return p, true
		}
	}
	if k := len(n.DependsOn.Nodes); k > 0 {
		return m.node(n.DependsOn.Nodes[k-1]) // dbt lists the parent of a relationships test first
	}
	return dbtNode{}, false
}

// sqlValues writes accepted values as SQL literals: quoted strings, or as they are (numbers).
func sqlValues(vals []string, quote bool) (string, string) {
	if len(vals) == 0 {
		return "", "no values to accept"
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		if quote {
			out[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
		} else {
			out[i] = v
		}
	}
	s := strings.Join(out, ", ")
	if _, err := parseValues(s); err != nil {
		return "", "values: " + err.Error()
	}
	return s, ""
}

// dbtAge turns recency's datepart and interval into a max_age.
func dbtAge(datepart, interval string) (string, string) {
	n, err := strconv.Atoi(interval)
	if err != nil || n <= 0 {
		return "", fmt.Sprintf("interval %q is not a whole number above 0", interval)
	}
	switch strings.ToLower(datepart) {
	case "minute":
		return fmt.Sprintf("%dm", n), ""
	case "hour":
		return fmt.Sprintf("%dh", n), ""
	case "day":
		return fmt.Sprintf("%dd", n), ""
	case "week":
		return fmt.Sprintf("%dd", 7*n), ""
	}
	return "", fmt.Sprintf("datepart %q: trueup's max_age takes minutes, hours, days and weeks", datepart)
}

// readManifest reads a dbt manifest: its models, seeds, snapshots and tests (nodes), its
// sources, and the ids of its unit tests (dbt 1.8+). Numbers stay as dbt wrote them. A test
// whose entry does not read is set aside with why (unreadable); anything else that does not read
// is an error, shown:line: message.
func readManifest(shown string, data []byte) (*dbtManifest, []string, error) {
	var raw struct {
		Nodes     map[string]json.RawMessage `json:"nodes"`
		Sources   map[string]json.RawMessage `json:"sources"`
		UnitTests map[string]json.RawMessage `json:"unit_tests"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, nil, manifestError(shown, data, err, "")
	}
	if raw.Nodes == nil {
		return nil, nil, fault.New(fault.Invalid, "%s:1: not a dbt manifest (target/manifest.json): it has no nodes", shown)
	}
	m := &dbtManifest{Nodes: map[string]dbtNode{}, Sources: map[string]dbtNode{}, unreadable: map[string]string{}, schemas: map[string]map[string]bool{}}
	read := func(into map[string]dbtNode, entries map[string]json.RawMessage) error {
		for id, entry := range entries {
			var n dbtNode
			dec := json.NewDecoder(bytes.NewReader(entry))
			dec.UseNumber()
			if err := dec.Decode(&n); err != nil {
				var kind struct {
					ResourceType string `json:"resource_type"`
				}
				if json.Unmarshal(entry, &kind) == nil && kind.ResourceType == "test" {
					m.unreadable[id] = "its entry in the manifest does not read: " + typeCause(err)
					continue
				}
				return manifestError(shown, data, err, id)
			}
			into[id] = n
			if n.ResourceType != "test" {
				if m.schemas[n.name()] == nil {
					m.schemas[n.name()] = map[string]bool{}
				}
				m.schemas[n.name()][n.Schema] = true
			}
		}
		return nil
	}
	if err := read(m.Nodes, raw.Nodes); err != nil {
		return nil, nil, err
	}
	if err := read(m.Sources, raw.Sources); err != nil {
		return nil, nil, err
	}
	unitTests := slices.Sorted(maps.Keys(raw.UnitTests))
	return m, unitTests, nil
}

// manifestError is err, met reading the manifest (the entry of id, "" for the whole file), as
// shown:line: message.
func manifestError(shown string, data []byte, err error, id string) error {
	line := func(off int64) int { return bytes.Count(data[:min(max(off, 0), int64(len(data)))], []byte("\n")) + 1 }
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fault.New(fault.Invalid, "%s:%d: not JSON: %v", shown, line(se.Offset-1), se) // the offset is past the character
	}
	if id == "" {
		return fault.New(fault.Invalid, "%s:1: not a dbt manifest (target/manifest.json): %s", shown, typeCause(err))
	}
	at := int64(bytes.Index(data, []byte(strconv.Quote(id))))
	return fault.New(fault.Invalid, "%s:%d: %s does not read: %s", shown, line(at), id, typeCause(err))
}

// typeCause says what a JSON value of the wrong type is, in JSON's words.
func typeCause(err error) string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err.Error()
	}
	want := map[reflect.Kind]string{reflect.String: "text", reflect.Bool: "true or false", reflect.Slice: "a list",
		reflect.Map: "an object", reflect.Struct: "an object", reflect.Interface: "a value"}[te.Type.Kind()]
	if want == "" {
		want = "a number"
	}
	if te.Field == "" {
		return fmt.Sprintf("it is %s, want %s", jsonWord(te.Value), want)
	}
	return fmt.Sprintf("%s is %s, want %s", te.Field, jsonWord(te.Value), want)
}

// jsonWord names a kind of JSON value as encoding/json reports it (number, string, array, …).
func jsonWord(v string) string {
	switch {
	case v == "array":
		return "a list"
	case v == "object":
		return "an object"
	case v == "string":
		return "text"
	case v == "bool":
		return "true or false"
	case strings.HasPrefix(v, "number"):
		return "a number"
	}
	return v
}
