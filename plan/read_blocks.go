package plan

import (
	"bytes"
	"strings"

	"go.yaml.in/yaml/v3"
)

// readTable reads one task per row of the plan's top-level tables whose
// first column holds ids ("| **S01** | Protocol view | Developer | S00 |")
// under a header that names it ("ID", "#", "Task", "Step", "Story"). A
// column headed "Depends", "Dependencies" or "Blocked by" declares
// dependencies; a "Title", "Task", "Name" or "Description" column gives
// the title, else the column after the id.
func (r *parseState) readTable(top topBlocks) reading {
	rd := reading{form: FormTable}
	for _, n := range top.tables {
		lines := n.Lines()
		if lines.Len() < 3 {
			continue
		}
		seg0, seg1 := lines.At(0), lines.At(1)
		header := tableCells(seg0.Value(r.body))
		if !isDelimiterRow(seg1.Value(r.body)) || len(header) < 2 {
			continue
		}
		idCol, titleCol, depCol, statusCol := -1, -1, -1, -1
		completedCol := false // a "Completed" column: "Yes" and a date mean done
		for i, h := range header {
			h = strings.ToLower(strings.Trim(h, "*_` "))
			switch {
			case idCol < 0 && i == 0 && oneOf(h, "id", "#", "no", "no.", "task id", "key", "ref", "step", "task", "story", "item", "ticket"):
				idCol = i
			case depCol < 0 && isDepHeader(h):
				depCol = i
			case statusCol < 0 && i > 0 && oneOf(h, "status", "done", "state", "completed", "complete", "estado", "statut", "stand", "状态", "状態", "상태", "进度", "進捗"):
				statusCol = i
				completedCol = oneOf(h, "done", "completed", "complete")
			case titleCol < 0 && i > 0 && oneOf(h, "title", "task", "name", "story", "description", "summary", "deliverable", "what", "goal", "feature", "work item", "scope",
				"tarea", "tarefa", "aufgabe", "tâche", "titel", "título", "titre", "descripción", "descrição", "beschreibung", "任务", "任務", "描述", "名称", "タスク", "内容", "작업", "내용"):
				titleCol = i
			}
		}
		if idCol < 0 {
			continue
		}
		if titleCol < 0 {
			titleCol = idCol + 1
		}
		var rows []taskBuild
		for i := 2; i < lines.Len(); i++ {
			seg := lines.At(i)
			cells := tableCells(seg.Value(r.body))
			if len(cells) <= titleCol {
				continue
			}
			idCell, _ := cutStatus(cells[idCol])
			id := strings.Trim(idCell, "*_` ~")
			if !isTableID(id) {
				continue
			}
			t := taskBuild{kind: labelCode}
			t.ID, t.explicitID = id, true
			t.Title = strings.TrimSpace(cells[titleCol])
			t.Start = r.lineStartOf(r.abs(seg.Start))
			t.End = r.lineEnd(r.lineOf(t.Start))
			t.headEnd = t.End
			if statusCol >= 0 && statusCol < len(cells) {
				t.Status = statusWord(cells[statusCol], completedCol)
				if t.Status == StatusPending {
					t.Status = StatusNone
				}
				t.Checked = t.Status.skips()
			}
			if _, st := cutStatus(cells[idCol]); st != StatusNone && t.Status == StatusNone { // "| ✅ S01 |"
				t.Status, t.Checked = st, st.skips()
			}
			if depCol >= 0 && depCol < len(cells) {
				cell := cells[depCol]
				off := bytes.Index(r.src[t.Start:t.End], []byte(cell))
				found, _ := r.depList(t.Start+max(off, 0), []byte(strings.NewReplacer("*", " ", "`", " ").Replace(cell)), true)
				t.deps = found
			}
			rows = append(rows, t)
		}
		if len(rows) >= 2 {
			rd.tasks = append(rd.tasks, rows...)
		}
	}
	return rd
}

// isDepHeader reports whether a table column header names dependencies:
// "Depends on", "Dependencias", "Depende de", "Abhängigkeiten",
// "Dépendances", "依赖", "前置", "依存", "의존성", "Blocked by".
func isDepHeader(h string) bool {
	for _, w := range []string{"depend", "blocked by", "prereq", "abhängig", "voraussetz", "dépend", "依赖", "依賴", "前置", "依存", "의존", "선행"} {
		if strings.Contains(h, w) {
			return true
		}
	}
	return false
}

func oneOf(s string, words ...string) bool {
	for _, w := range words {
		if s == w {
			return true
		}
	}
	return false
}

// isTableID reports whether a table cell holds a task id: "3", "3.2",
// "T012", "S01", "P0-1".
func isTableID(s string) bool {
	s = strings.TrimSuffix(s, ".")
	return s != "" && (dottedNumber(s) == len(s) || codeID(s) == len(s) || isDepID(s) || slugID(s) == len(s))
}

// tableCells splits a table row into its cells, trimmed; a "\|" is part
// of a cell.
func tableCells(row []byte) []string {
	s := strings.TrimSpace(string(row))
	s = strings.TrimPrefix(s, "|")
	if strings.HasSuffix(s, "|") && !strings.HasSuffix(s, "\\|") {
		s = s[:len(s)-1]
	}
	var cells []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '|':
			cells = append(cells, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	return append(cells, strings.TrimSpace(s[start:]))
}

// isDelimiterRow reports whether a row is a table's "|---|:--:|" line.
func isDelimiterRow(row []byte) bool {
	cells := tableCells(row)
	for _, c := range cells {
		c = strings.Trim(c, ":")
		if c == "" || strings.Trim(c, "-") != "" {
			return false
		}
	}
	return len(cells) > 0
}

// readXML reads <task> ... </task> blocks some planners emit, each a task:
// its id and title come from the <name> element ("<name>Task 1: Add
// schema</name>") or an id="..." attribute. Blocks inside code are not
// read.
func (r *parseState) readXML(top topBlocks) reading {
	rd := reading{form: FormXML}
	if !bytes.Contains(r.body, []byte("<task")) {
		return rd // one fast scan spares a look at every line
	}
	code := 0
	for l := r.lineOf(r.base); l < len(r.lines); l++ {
		if !r.lineStartsWith(l, "<task") {
			continue
		}
		from := max(r.lines[l], r.base) // after a byte order mark
		at := from + bytes.Index(r.src[from:], []byte("<task"))
		if next := at + len("<task"); next >= len(r.src) || (r.src[next] != ' ' && r.src[next] != '>') {
			continue
		}
		for code < len(top.code) && top.code[code][1] < l {
			code++
		}
		if code < len(top.code) && top.code[code][0] <= l {
			continue
		}
		// The closing tag: on the opening line, or starting a later one.
		last := l
		if !bytes.Contains(lineText(r.src, r.lines, l), []byte("</task>")) {
			for last = l + 1; last < len(r.lines)-1 && !r.lineStartsWith(last, "</task>"); last++ {
			}
		}
		t := taskBuild{}
		t.Start, t.End = from, r.lineEnd(last)
		t.headEnd = r.lineEnd(l)
		block := r.src[t.Start:t.End]
		opener := string(r.src[at:t.headEnd])
		name := between(block, "<name>", "</name>")
		if name == "" {
			name = between(block, "<title>", "</title>")
		}
		if lab := parseLabel(name, true); lab.kind != labelNone {
			t.ID, t.Title, t.explicitID, t.kind = lab.id, lab.title, true, lab.kind
		} else {
			t.Title = name
			if id := between([]byte(opener), `id="`, `"`); id != "" {
				t.ID, t.explicitID = id, true
			}
		}
		t.Checked = strings.Contains(opener, `status="done"`) || strings.Contains(opener, `status="complete`)
		rd.tasks = append(rd.tasks, t)
		l = last
	}
	return rd
}

// lineStartsWith reports whether 0-based line l, after its indentation,
// starts with prefix.
func (r *parseState) lineStartsWith(l int, prefix string) bool {
	i := max(r.lines[l], r.base) // after a byte order mark
	for i < len(r.src) && (r.src[i] == ' ' || r.src[i] == '\t') {
		i++
	}
	return len(r.src)-i >= len(prefix) && string(r.src[i:i+len(prefix)]) == prefix
}

// between returns the text of s between the first open and the close
// after it, or "".
func between(s []byte, open, close string) string {
	i := bytes.Index(s, []byte(open))
	if i < 0 {
		return ""
	}
	s = s[i+len(open):]
	j := bytes.Index(s, []byte(close))
	if j < 0 {
		return ""
	}
	return string(bytes.TrimSpace(s[:j]))
}

// readTodos reads the tasks a Cursor plan lists in its front matter:
//
//	todos:
//	  - id: schema
//	    content: Add the schema
//	    status: pending
//	    dependencies: [setup]
//
// A task's span is its item's lines in the front matter; the whole body
// is the shared context.
func (r *parseState) readTodos(topBlocks) reading {
	rd := reading{form: FormTodos}
	if _, ok := r.plan.FrontMatter["todos"].([]any); !ok {
		return rd
	}
	var root yaml.Node
	if yaml.Unmarshal(r.src[r.fm[0]:r.fm[1]], &root) != nil || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return rd
	}
	firstLine := r.lineOf(r.fm[0]) // 0-based line of the front matter's first line
	doc := root.Content[0]
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value != "todos" || doc.Content[i+1].Kind != yaml.SequenceNode {
			continue
		}
		end := r.fm[1]
		if i+2 < len(doc.Content) {
			end = r.lines[firstLine+doc.Content[i+2].Line-1]
		}
		items := doc.Content[i+1].Content
		for j, item := range items {
			if item.Kind != yaml.MappingNode {
				continue
			}
			t := taskBuild{}
			t.Start = r.lines[firstLine+item.Line-1]
			t.End = end
			if j+1 < len(items) {
				t.End = r.lines[firstLine+items[j+1].Line-1]
			}
			t.End = r.trimEnd(t.Start, t.End, false)
			t.headEnd = t.End
			for k := 0; k+1 < len(item.Content); k += 2 {
				key, v := item.Content[k].Value, item.Content[k+1]
				switch key {
				case "id":
					t.ID, t.explicitID = v.Value, v.Value != ""
				case "content", "title", "name", "task":
					t.Title = v.Value
				case "status":
					t.Checked = oneOf(strings.ToLower(v.Value), "completed", "complete", "done")
				case "dependencies", "depends_on", "deps":
					for _, d := range v.Content {
						t.deps = append(t.deps, depRef{id: d.Value, line: firstLine + d.Line, col: d.Column})
					}
				}
			}
			t.hasBody = true
			rd.tasks = append(rd.tasks, t)
		}
	}
	return rd
}

// readYAML reads the task list a PRP (product requirements prompt) keeps
// in a fenced yaml block, one entry per "Task N:" line at the block's
// margin:
//
//	```yaml
//	Task 1:
//	MODIFY src/existing_module.py:
//	  - FIND pattern: "class OldImplementation"
//
//	Task 2: Add the CLI
//	CREATE src/cli.py:
//	```
//
// Code is never read for tasks, except here: the block is the plan's
// task list, and a block needs two entries to be one. An entry runs to
// the next entry or the closing fence; "STATUS [DONE]" in it checks it.
func (r *parseState) readYAML(top topBlocks) reading {
	rd := reading{form: FormYAML}
	for _, fc := range top.yaml {
		lines := fc.Lines()
		if lines.Len() < 2 {
			continue
		}
		var found []taskBuild
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			raw := r.body[seg.Start:seg.Stop] // not seg.Value: that copies every line
			if len(raw) == 0 || (raw[0]|0x20 != 't' && raw[0]|0x20 != 's' && raw[0] < 0x80) || !bytes.ContainsAny(raw, ":：") {
				continue // entries start "Task", "Step", "任务", ...
			}
			line := string(bytes.TrimRight(raw, "\r\n"))
			lab := parseLabel(line, false)
			if (lab.kind != labelTask && lab.kind != labelStep) || !strings.Contains(line, ":") {
				continue
			}
			t := taskBuild{kind: lab.kind}
			t.ID, t.Title, t.explicitID = lab.id, strings.TrimSuffix(lab.title, ":"), true
			t.Start = r.lineStartOf(r.abs(seg.Start))
			t.headEnd = r.lineEnd(r.lineOf(t.Start))
			found = append(found, t)
		}
		if len(found) < 2 {
			continue
		}
		if rd.tasks == nil {
			rd.tasks = make([]taskBuild, 0, len(found))
		}
		closing := r.lineOf(r.abs(lines.At(lines.Len()-1).Start)) + 1 // the closing fence's line
		blockEnd := len(r.src)
		if closing < len(r.lines) {
			blockEnd = r.lines[closing]
		}
		for i := range found {
			end := blockEnd
			if i+1 < len(found) {
				end = found[i+1].Start
			}
			t := &found[i]
			t.End = r.trimEnd(t.Start, end, false)
			body := r.src[t.headEnd:t.End]
			for rest := body; t.Title == "" && len(rest) > 0; { // "Task 1:" then "MODIFY src/x.py:"
				l := rest
				if i := bytes.IndexByte(rest, '\n'); i >= 0 {
					l, rest = rest[:i], rest[i+1:]
				} else {
					rest = nil
				}
				if l = bytes.TrimSpace(l); len(l) > 0 {
					t.Title = strings.TrimSuffix(string(l), ":")
				}
			}
			if bytes.Contains(body, []byte("STATUS [DONE]")) || bytes.Contains(body, []byte("STATUS [x]")) {
				t.Checked, t.Status = true, StatusDone
			}
		}
		rd.tasks = append(rd.tasks, found...)
	}
	return rd
}
