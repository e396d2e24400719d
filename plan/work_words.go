package plan

import (
	"strings"
	"unicode/utf8"
)

// What a heading says about the section under it, as a reader weighs it
// when two structures of a plan both look like a task list: the list
// under "## Step by Step Tasks" is the work; the numbered sections under
// "## Technical details" or "## Benefits" explain it.

// taskListNames are headings that name the plan's task list itself, in
// English and in the other languages plans are written in. A heading
// names it when, without numbering, emphasis and a trailing colon, it is
// one of these, or one of these after a qualifier ("Implementation
// tasks", "Step by step tasks", "Detailed task breakdown").
var taskListNames = []string{
	"tasks", "task list", "task breakdown", "tasks created", "todo", "todos", "to do", "to-do", "to-do list", "todo list",
	"steps", "implementation steps", "execution steps", "work items", "action items", "work breakdown", "list of tasks",
	"tareas", "lista de tareas", "pasos", "tarefas", "lista de tarefas", "passos", "etapas",
	"aufgaben", "aufgabenliste", "schritte", "arbeitspakete", "umsetzungsschritte",
	"tâches", "liste des tâches", "étapes", "taches",
	"任务", "任务列表", "任务清单", "任务分解", "任务拆解", "实施步骤", "实现步骤", "开发任务", "任務", "任務清單", "要完成的任務清單", "要完成的任务清单",
	"タスク", "タスク一覧", "タスクリスト", "実装タスク", "実装手順", "作業手順", "手順",
	"작업", "작업 목록", "구현 단계", "할 일", "태스크",
}

// taskListQualifiers may come before a task list's name: "Step by step
// tasks", "Implementation tasks", "Detailed task breakdown".
var taskListQualifiers = []string{"step by step", "step-by-step", "implementation", "detailed", "remaining", "ordered", "development", "open", "planned", "coding", "atomic"}

// namesTaskList reports whether a heading names the plan's task list.
func namesTaskList(title string) bool {
	t := headingWords(title)
	if t == "" || explainsWork(t) {
		return false
	}
	for _, n := range taskListNames {
		if t == n {
			return true
		}
	}
	for _, q := range taskListQualifiers {
		if rest, ok := strings.CutPrefix(t, q+" "); ok {
			for _, n := range taskListNames {
				if rest == n {
					return true
				}
			}
		}
	}
	return false
}

// explainWords name sections that explain, motivate or check the work
// rather than list it. A numbered list or numbered headings under one of
// them are its points, not the plan's tasks.
var explainWords = []string{
	"detail", "explanation", "explained", "overview", "summary", "background", "context", "benefit", "advantage",
	"motivation", "rationale", "why", "notes", "note", "appendix", "reference", "example", "glossary", "legend",
	"faq", "risk", "alternative", "acceptance", "criteria", "session", "history", "changelog", "metric", "estimat",
	"timeline", "resource", "lessons", "decision", "findings", "research", "analysis", "problem", "requirement",
	"goal", "objective", "non-goal", "scope", "assumption", "constraint", "open question", "question", "testing strategy",
	"dependencies", "dependency", "relevant files", "files", "preview", "data model",
	"resumo", "arquivos", "archivos", "dateien", "fichiers", "fluxo", "flujo", "estratégia", "estrategia", "strategie", "stratégie",
	"detalle", "resumen", "contexto", "beneficio", "ventaja", "notas", "requisito", "objetivo", "riesgo",
	"übersicht", "hintergrund", "notiz", "vorteil", "anforderung", "ziel", "risiko", "kontext", "datenmodell",
	"détail", "aperçu", "contexte", "avantage", "exigence", "objectif", "risque", "résumé",
	"说明", "概述", "背景", "详情", "详细", "示例", "优先级", "目标", "需求", "风险", "總覽", "說明",
	"概要", "詳細", "備考", "目的", "要件", "リスク", "개요", "설명", "배경", "요구사항", "목표", "위험",
}

// explainsWork reports whether a heading (its words, as headingWords
// gives them) names a section that explains or checks the work: asides
// ("Acceptance criteria") and explanations ("Technical details",
// "Benefits", "Session notes").
func explainsWork(words string) bool {
	if isAside(words) {
		return true
	}
	for _, w := range explainWords {
		if w[0] >= utf8.RuneSelf {
			if strings.Contains(words, w) {
				return true
			}
			continue
		}
		for i := 0; ; {
			j := strings.Index(words[i:], w)
			if j < 0 {
				break
			}
			j += i
			if j == 0 || !isLetter(words[j-1]) {
				return true
			}
			i = j + 1
		}
	}
	return false
}

// headingWords is a heading's title as words to compare: lower case,
// without status marks, leading numbers ("2.", "Phase 3:"), emphasis,
// symbols and a trailing colon.
func headingWords(title string) string {
	t, _ := cutStatus(title)
	t = trimLeadingSymbols(strings.Trim(t, " *_`#"))
	t = strings.TrimLeft(t, "0123456789.)-–— ")
	t = strings.Trim(strings.ToLower(t), " *_`:：")
	t = strings.TrimRight(t, " ()（）")
	return strings.Join(strings.Fields(t), " ")
}

// showsOnly reports whether a heading (as headingWords gives it) names a
// section that shows tasks without asking for them: a preview of the
// breakdown, an example, a template.
func showsOnly(words string) bool {
	for _, w := range []string{"preview", "example", "examples", "template", "sample", "ejemplo", "beispiel", "exemple", "示例", "例"} {
		if words == w || strings.HasSuffix(words, " "+w) || (w[0] >= utf8.RuneSelf && strings.HasSuffix(words, w)) {
			return true
		}
	}
	return false
}
