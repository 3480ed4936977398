//! A plan file: `[[task]]` entries and their dependencies, read and checked
//! whole before anything runs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use clix_common::names::UnknownField;
use serde::Serialize;
use toml::Value;

/// Fields a `[[task]]` may have.
const TASK_FIELDS: &[&str] = &[
    "id",
    "prompt",
    "depends_on",
    "inputs",
    "writes",
    "model",
    "provider",
    "max_steps",
    "timeout_secs",
    "retries",
    "domain",
];

/// Top-level places in a plan workspace that no `writes` may name: each
/// agent's folder is its own, `shared/` is read-only to all.
pub const RESERVED: &[&str] = &["agents", "shared", ".clix"];

/// One task of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Task {
    /// Unique; also its folder `agents/<id>/`.
    pub id: String,
    /// What its agent is asked.
    pub prompt: String,
    /// Tasks that must be done before it starts.
    pub depends_on: Vec<String>,
    /// Tasks whose results it gets, and whose folders it reads.
    pub inputs: Vec<String>,
    /// Workspace folders it may write besides its own.
    pub writes: Vec<PathBuf>,
    /// Model name, beating the configuration.
    pub model: Option<String>,
    /// `openai` or `anthropic`.
    pub provider: Option<String>,
    /// Model calls of its agent.
    pub max_steps: Option<u32>,
    /// Wall time of one attempt.
    pub timeout_secs: Option<u64>,
    /// Attempts after the first when it fails.
    pub retries: u32,
    /// Hub domains its agent sees.
    pub domain: Vec<String>,
}

/// A checked plan: ids unique, dependencies known and acyclic, inputs among
/// the dependencies, no two tasks that may run at once writing one place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// In file order.
    pub tasks: Vec<Task>,
}

/// Everything wrong with a plan, each with its fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .problems.iter().map(|p| format!("{}: {p}", .file)).collect::<Vec<_>>().join("\n"))]
pub struct PlanError {
    /// The plan file (or what the plan came from).
    pub file: String,
    /// One line per problem.
    pub problems: Vec<String>,
}

impl Plan {
    /// Reads and checks a plan's TOML text; `source` names it in errors.
    /// Every problem is found in one pass: a task with a bad field is still
    /// read (without that field), so the checks that need the whole plan
    /// (ids, cycles, inputs, shared `writes`) run over every task too.
    pub fn parse(text: &str, source: &str) -> Result<Plan, PlanError> {
        let fail = |problems: Vec<String>| PlanError { file: source.to_string(), problems };
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let line = e.span().map_or(1, |span| text[..span.start.min(text.len())].lines().count().max(1));
            fail(vec![format!("line {line}: {}; the file is not valid TOML", e.message())])
        })?;
        let mut problems = Vec::new();
        for unknown in UnknownField::among(table.keys().map(String::as_str), &["task"]) {
            problems.push(format!("{unknown} (a plan is `[[task]]` entries)"));
        }
        let entries: &[Value] = match table.get("task") {
            Some(Value::Array(items)) if !items.is_empty() => items,
            Some(Value::Array(_)) | None => {
                problems.push("no `[[task]]` entries; add at least one with `id` and `prompt`".into());
                &[]
            }
            Some(_) => {
                problems.push("`task` must be `[[task]]` entries, each with `id` and `prompt`".into());
                &[]
            }
        };
        let (mut tasks, mut names) = (Vec::new(), Vec::new());
        for (i, entry) in entries.iter().enumerate() {
            if let Some((task, name)) = read_task(i, entry, &mut problems) {
                tasks.push(task);
                names.push(name);
            }
        }
        let plan = Plan { tasks };
        problems.extend(plan.problems(&names));
        if problems.is_empty() { Ok(plan) } else { Err(fail(problems)) }
    }

    /// The task named `id`.
    pub fn task(&self, id: &str) -> Option<&Task> {
        self.tasks.iter().find(|t| t.id == id)
    }

    /// The problems that need the whole plan; `names[i]` is how messages
    /// name task `i` (`task \`a\``, or `task 3` when it has no id).
    fn problems(&self, names: &[String]) -> Vec<String> {
        let mut problems = Vec::new();
        let mut seen = BTreeSet::new();
        // A task without an id was reported already; nothing can name it.
        let ids: Vec<&str> = self.tasks.iter().map(|t| t.id.as_str()).filter(|id| !id.is_empty()).collect();
        for id in &ids {
            if !seen.insert(*id) {
                problems.push(format!("task `{id}` is defined twice; give each task its own id"));
            }
        }
        for (t, name) in self.tasks.iter().zip(names) {
            for (field, named) in [("depends_on", &t.depends_on), ("inputs", &t.inputs)] {
                for dep in named.iter().filter(|d| !ids.contains(&d.as_str())) {
                    let hint = clix_common::names::did_you_mean(dep, ids.iter().copied())
                        .map(|s| format!(" (did you mean `{s}`?)"))
                        .unwrap_or_default();
                    problems.push(format!(
                        "{name}: {field} names `{dep}`, which is not a task{hint}; tasks: {}",
                        ids.join(", ")
                    ));
                }
                if !t.id.is_empty() && named.contains(&t.id) {
                    problems.push(format!("{name} names itself in its {field}; remove `{}` from it", t.id));
                }
            }
        }
        for cycle in self.cycles() {
            problems.push(format!(
                "the dependencies form a cycle: {}; remove one of these dependencies",
                cycle.join(" → ")
            ));
        }
        let before: Vec<BTreeSet<&str>> = self.tasks.iter().map(|t| self.reach(&t.depends_on)).collect();
        for ((t, name), before) in self.tasks.iter().zip(names).zip(&before) {
            // Unknown and own ids were reported above.
            let late =
                t.inputs.iter().filter(|i| ids.contains(&i.as_str()) && **i != t.id && !before.contains(i.as_str()));
            for input in late {
                problems.push(format!(
                    "{name} takes the inputs of `{input}` but does not depend on it, so they may not exist yet; \
                     add `{input}` to its depends_on"
                ));
            }
        }
        for (i, a) in self.tasks.iter().enumerate() {
            for (j, b) in self.tasks.iter().enumerate().skip(i + 1) {
                if before[i].contains(b.id.as_str()) || before[j].contains(a.id.as_str()) {
                    continue;
                }
                for wa in &a.writes {
                    if let Some(wb) = b.writes.iter().find(|wb| wa.starts_with(wb) || wb.starts_with(wa)) {
                        problems.push(format!(
                            "{} and {} may run at the same time and both write `{}`{}; make one depend on the \
                             other, or give them different folders",
                            names[i],
                            names[j],
                            wa.display(),
                            if wa == wb { String::new() } else { format!(" and `{}`", wb.display()) }
                        ));
                    }
                }
            }
        }
        problems
    }

    /// The dependency cycles a depth-first walk closes (one per dependency
    /// back to a task still open), each as the ids along it (the first
    /// repeated last): none only when there is no cycle, though of cycles
    /// that share dependencies not every one may be listed. A task
    /// depending on itself is reported on its own, not here.
    fn cycles(&self) -> Vec<Vec<String>> {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            Open,
            Done,
        }
        struct Walk<'p> {
            plan: &'p Plan,
            index: BTreeMap<&'p str, usize>,
            marks: Vec<Mark>,
            path: Vec<usize>,
            found: Vec<Vec<String>>,
        }
        fn visit(walk: &mut Walk<'_>, at: usize) {
            walk.marks[at] = Mark::Open;
            walk.path.push(at);
            let plan = walk.plan;
            for dep in &plan.tasks[at].depends_on {
                let Some(&next) = walk.index.get(dep.as_str()) else { continue };
                match walk.marks[next] {
                    Mark::Open if next != at => {
                        let from = walk.path.iter().position(|&p| p == next).unwrap_or(0);
                        let mut ids: Vec<String> =
                            walk.path[from..].iter().map(|&p| plan.tasks[p].id.clone()).collect();
                        ids.push(plan.tasks[next].id.clone());
                        walk.found.push(ids);
                    }
                    Mark::New => visit(walk, next),
                    Mark::Open | Mark::Done => {}
                }
            }
            walk.path.pop();
            walk.marks[at] = Mark::Done;
        }
        let index = self.tasks.iter().enumerate().filter(|(_, t)| !t.id.is_empty()).map(|(i, t)| (t.id.as_str(), i));
        let mut walk = Walk {
            plan: self,
            index: index.rev().collect(), // the first of two tasks with one id wins, as in `task`
            marks: vec![Mark::New; self.tasks.len()],
            path: Vec::new(),
            found: Vec::new(),
        };
        for start in 0..self.tasks.len() {
            if walk.marks[start] == Mark::New {
                visit(&mut walk, start);
            }
        }
        walk.found
    }

    /// Every task `id` waits for, directly or not.
    pub fn ancestors(&self, id: &str) -> BTreeSet<&str> {
        self.task(id).map(|t| self.reach(&t.depends_on)).unwrap_or_default()
    }

    /// The tasks named in `from` and every task they wait for.
    fn reach<'p>(&'p self, from: &'p [String]) -> BTreeSet<&'p str> {
        let mut found = BTreeSet::new();
        let mut pending: Vec<&str> = from.iter().map(String::as_str).collect();
        while let Some(at) = pending.pop() {
            if found.insert(at) {
                pending.extend(
                    self.task(at).map(|t| t.depends_on.as_slice()).unwrap_or_default().iter().map(String::as_str),
                );
            }
        }
        found
    }

    /// The tasks in layers: each after every task it depends on.
    pub fn layers(&self) -> Vec<Vec<&str>> {
        let mut placed: BTreeSet<&str> = BTreeSet::new();
        let mut layers = Vec::new();
        while placed.len() < self.tasks.len() {
            let layer: Vec<&str> = self
                .tasks
                .iter()
                .filter(|t| !placed.contains(t.id.as_str()) && t.depends_on.iter().all(|d| placed.contains(d.as_str())))
                .map(|t| t.id.as_str())
                .collect();
            if layer.is_empty() {
                break;
            }
            placed.extend(layer.iter().copied());
            layers.push(layer);
        }
        layers
    }

    /// The plan as text: one line per task, in layers, with what it waits for.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (n, layer) in self.layers().iter().enumerate() {
            for id in layer {
                let Some(task) = self.task(id) else { continue };
                let (deps, writes) = (task.depends_on.join(", "), &task.writes);
                let deps = if deps.is_empty() { String::new() } else { format!(" ← {deps}") };
                let writes = if writes.is_empty() {
                    String::new()
                } else {
                    let w: Vec<String> = writes.iter().map(|w| format!("{}/", w.display())).collect();
                    format!("  (writes {})", w.join(", "))
                };
                out.push_str(&format!("{} {id}{deps}{writes}\n", n + 1));
            }
        }
        out
    }

    /// The plan as a Graphviz digraph, an edge from each dependency.
    pub fn dot(&self) -> String {
        let mut out = String::from("digraph plan {\n  rankdir=LR;\n");
        for t in &self.tasks {
            out.push_str(&format!("  \"{}\";\n", t.id));
            for dep in &t.depends_on {
                out.push_str(&format!("  \"{dep}\" -> \"{}\";\n", t.id));
            }
        }
        out.push_str("}\n");
        out
    }
}

/// One `[[task]]` and how messages name it, its own problems added to
/// `problems`. A field with a problem is left out (an id-less task has the
/// id ""), so the whole-plan checks still see the rest; `None` only when
/// the entry is not a table at all.
fn read_task(index: usize, value: &Value, problems: &mut Vec<String>) -> Option<(Task, String)> {
    let Value::Table(table) = value else {
        problems.push(format!("task {} is not a table; write it as [[task]] with id = … and prompt = …", index + 1));
        return None;
    };
    let id = table.get("id").and_then(Value::as_str).map(str::to_string);
    let name = id.clone().map(|id| format!("task `{id}`")).unwrap_or_else(|| format!("task {}", index + 1));
    let mut problem = |text: String| problems.push(format!("{name}: {text}"));
    for unknown in UnknownField::among(table.keys().map(String::as_str), TASK_FIELDS) {
        problem(unknown.to_string());
    }
    match &id {
        None => problem("no `id`; give it a short name such as id = \"fetch\"".into()),
        Some(id) if !valid_id(id) => {
            problem(format!("id `{id}` must be letters, digits, `-` and `_` (it names the folder agents/<id>/)"))
        }
        Some(_) => {}
    }
    let prompt = table.get("prompt").and_then(Value::as_str).unwrap_or_default().to_string();
    if prompt.trim().is_empty() {
        problem("no `prompt`; say what its agent should do".into());
    }
    let mut strings = |field: &str| -> Vec<String> {
        match table.get(field) {
            None => vec![],
            Some(Value::Array(items)) if items.iter().all(Value::is_str) => {
                items.iter().filter_map(Value::as_str).map(str::to_string).collect()
            }
            Some(_) => {
                problem(format!("`{field}` must be a list of strings, as {field} = [\"a\", \"b\"]"));
                vec![]
            }
        }
    };
    let depends_on = strings("depends_on");
    let inputs = strings("inputs");
    let domain = strings("domain");
    let writes_raw = strings("writes");
    let mut writes: Vec<PathBuf> = Vec::new();
    for w in writes_raw {
        match writable_path(&w) {
            // One folder inside another of the same task would be bound by
            // name inside a folder the agent can rewrite (a symlink there
            // would be mounted read-write at the next program's start).
            Ok(p) if writes.iter().any(|q| q.starts_with(&p) || p.starts_with(q)) => {
                problem(format!("writes `{w}` overlaps another of its writes; list only the outer folder"))
            }
            Ok(p) => writes.push(p),
            Err(why) => problem(format!("writes `{w}`: {why}")),
        }
    }
    let mut text = |field: &str| match table.get(field) {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            problem(format!("`{field}` must be a string"));
            None
        }
    };
    let (model, provider) = (text("model"), text("provider"));
    let mut number = |field: &str, max: i64| match table.get(field) {
        None => None,
        Some(Value::Integer(n)) if (0..=max).contains(n) => Some(*n as u64),
        Some(_) => {
            problem(format!("`{field}` must be a whole number from 0 to {max}"));
            None
        }
    };
    let max_steps = number("max_steps", 10_000).map(|n| n as u32);
    let timeout_secs = number("timeout_secs", 86_400);
    let retries = number("retries", 10).unwrap_or(0) as u32;
    let task = Task {
        id: id.unwrap_or_default(),
        prompt,
        depends_on,
        inputs,
        writes,
        model,
        provider,
        max_steps,
        timeout_secs,
        retries,
        domain,
    };
    Some((task, name))
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && !id.starts_with('-')
}

/// A `writes` entry as a clean relative path, or why it cannot be one.
fn writable_path(raw: &str) -> Result<PathBuf, String> {
    let path = Path::new(raw.trim_end_matches('/'));
    if path.is_absolute() {
        return Err("must be relative to the workspace".into());
    }
    let mut clean = PathBuf::new();
    for part in path.components() {
        match part {
            Component::Normal(p) => clean.push(p),
            Component::CurDir => {}
            _ => return Err("must stay inside the workspace (no `..`)".into()),
        }
    }
    let first = clean.components().next().map(|c| c.as_os_str().to_string_lossy().into_owned());
    match first {
        None => Err("names the whole workspace; name a folder inside it".into()),
        Some(first) if RESERVED.contains(&first.as_str()) => {
            Err(format!("`{first}/` is the runtime's (each agent writes its own agents/<id>/; shared/ is read-only)"))
        }
        Some(_) => Ok(clean),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(text: &str) -> Vec<String> {
        Plan::parse(text, "p.toml").map(|_| vec![]).unwrap_or_else(|e| e.problems)
    }

    #[test]
    fn a_diamond_reads_and_renders_in_layers() {
        let plan = Plan::parse(
            r#"
[[task]]
id = "a"
prompt = "fetch"
[[task]]
id = "b"
prompt = "left"
depends_on = ["a"]
inputs = ["a"]
writes = ["out/b/"]
[[task]]
id = "c"
prompt = "right"
depends_on = ["a"]
[[task]]
id = "d"
prompt = "join"
depends_on = ["b", "c"]
inputs = ["a", "b", "c"]
retries = 2
"#,
            "p.toml",
        )
        .unwrap();
        assert_eq!(plan.layers(), vec![vec!["a"], vec!["b", "c"], vec!["d"]]);
        assert_eq!(plan.render(), "1 a\n2 b ← a  (writes out/b/)\n2 c ← a\n3 d ← b, c\n");
        assert!(plan.dot().contains("\"b\" -> \"d\";"), "{}", plan.dot());
        assert_eq!(plan.ancestors("d"), BTreeSet::from(["a", "b", "c"]));
        assert_eq!(plan.task("d").unwrap().retries, 2);
    }

    #[test]
    fn every_problem_is_listed_with_its_fix() {
        let cases: &[(&str, &str)] = &[
            (
                "[[task]]\nid = \"a\"\nprompt = \"x\"\ndepnds_on = [\"b\"]",
                "unknown field `depnds_on`; did you mean `depends_on`?",
            ),
            (
                "[[task]]\nid = \"a\"\nprompt = \"x\"\ndepends_on = [\"ghost\"]",
                "depends_on names `ghost`, which is not a task",
            ),
            ("[[task]]\nid = \"a\"\nprompt = \"x\"\n[[task]]\nid = \"a\"\nprompt = \"y\"", "task `a` is defined twice"),
            (
                "[[task]]\nid = \"a\"\nprompt = \"x\"\ndepends_on = [\"c\"]\n[[task]]\nid = \"b\"\nprompt = \"y\"\ndepends_on = [\"a\"]\n[[task]]\nid = \"c\"\nprompt = \"z\"\ndepends_on = [\"b\"]",
                "a cycle: a → c → b → a; remove one of these dependencies",
            ),
            (
                "[[task]]\nid = \"a\"\nprompt = \"x\"\nwrites = [\"src\"]\n[[task]]\nid = \"b\"\nprompt = \"y\"\nwrites = [\"src/gen\"]",
                "task `a` and task `b` may run at the same time and both write `src` and `src/gen`",
            ),
            (
                "[[task]]\nid = \"a\"\nprompt = \"x\"\n[[task]]\nid = \"b\"\nprompt = \"y\"\ninputs = [\"a\"]",
                "add `a` to its depends_on",
            ),
            ("[[task]]\nid = \"a\"\nprompt = \"x\"\nwrites = [\"../up\"]", "no `..`"),
            ("[[task]]\nid = \"a\"\nprompt = \"x\"\nwrites = [\"src\", \"src/gen\"]", "overlaps another of its writes"),
            ("[[task]]\nid = \"a\"\nprompt = \"x\"\nwrites = [\"shared\"]", "`shared/` is the runtime's"),
            ("[[task]]\nid = \"a b\"\nprompt = \"x\"", "must be letters, digits"),
            ("[[task]]\nid = \"a\"", "no `prompt`"),
            ("[[task]]\nid = \"a\"\nprompt = \"x\"\nretries = \"2\"", "`retries` must be a whole number"),
            ("title = \"x\"", "unknown field `title`"),
            ("", "no `[[task]]` entries"),
            ("[[task]\n", "line 1: unclosed array table"),
        ];
        for (text, says) in cases {
            let found = problems(text);
            assert!(found.iter().any(|p| p.contains(says)), "{text:?}: {found:?}");
        }
        // Ordered tasks may share a folder.
        assert!(problems("[[task]]\nid = \"a\"\nprompt = \"x\"\nwrites = [\"src\"]\n[[task]]\nid = \"b\"\nprompt = \"y\"\nwrites = [\"src\"]\ndepends_on = [\"a\"]").is_empty());
    }

    /// An unknown field names the file and the task: a slip gets its near
    /// name, another word the fields there are.
    #[test]
    fn unknown_fields_name_the_file_and_the_task() {
        let cases = [
            (
                "[[task]]\nid = \"a\"\nprompt = \"x\"\ndepnds_on = []",
                "plan.toml: task `a`: unknown field `depnds_on`; did you mean `depends_on`?",
            ),
            (
                "[[task]]\nid = \"a\"\nprompt = \"x\"\ncolour = 1",
                "plan.toml: task `a`: unknown field `colour`; known fields: id, prompt, depends_on, inputs, writes, \
                 model, provider, max_steps, timeout_secs, retries, domain",
            ),
            (
                "[[tsak]]\nid = \"a\"",
                "plan.toml: unknown field `tsak`; did you mean `task`? (a plan is `[[task]]` entries)",
            ),
            (
                "title = \"x\"\n[[task]]\nid = \"a\"\nprompt = \"x\"",
                "plan.toml: unknown field `title`; known fields: task (a plan is `[[task]]` entries)",
            ),
        ];
        for (text, want) in cases {
            let shown = Plan::parse(text, "plan.toml").unwrap_err().to_string();
            assert!(shown.lines().any(|l| l == want), "{text:?}: {shown}");
        }
        // The fields are the task's own: one added to `Task` and not to the list would be refused.
        let plan = Plan::parse("[[task]]\nid = \"a\"\nprompt = \"x\"", "plan.toml").unwrap();
        let task = serde_json::to_value(&plan.tasks[0]).unwrap();
        let mut keys: Vec<&str> = task.as_object().unwrap().keys().map(String::as_str).collect();
        let mut fields = TASK_FIELDS.to_vec();
        keys.sort_unstable();
        fields.sort_unstable();
        assert_eq!(keys, fields);
    }

    /// One pass finds everything: a task's own problems (a bad field,
    /// which used to drop the task from the whole-plan checks) and the
    /// plan's (unknown ids, cycles, inputs, shared writes) come together.
    #[test]
    fn a_plan_with_several_problems_reports_all_of_them_at_once() {
        let cases: &[(&str, &str, &[&str])] = &[
            (
                "a bad writes hid an unknown dependency",
                "[[task]]\nid = \"a\"\nprompt = \"x\"\nwrites = [\"/abs\"]\ndepends_on = [\"ghost\"]",
                &[
                    "task `a`: writes `/abs`: must be relative",
                    "task `a`: depends_on names `ghost`, which is not a task",
                ],
            ),
            (
                "a task with a bad field is still a task others may name",
                "[[task]]\nid = \"a\"\nprompt = \"x\"\nretries = -1\n[[task]]\nid = \"b\"\nprompt = \"y\"\ndepends_on = [\"a\"]\ninputs = [\"c\"]",
                &["task `a`: `retries` must be a whole number", "task `b`: inputs names `c`, which is not a task"],
            ),
            (
                "an unknown id does not hide a cycle, nor a cycle an input or shared writes",
                "[[task]]\nid = \"a\"\nprompt = \"x\"\ndepends_on = [\"b\", \"nope\"]\n[[task]]\nid = \"b\"\nprompt = \"y\"\ndepends_on = [\"a\"]\n[[task]]\nid = \"c\"\nprompt = \"z\"\ninputs = [\"a\"]\nwrites = [\"out\"]\n[[task]]\nid = \"d\"\nprompt = \"w\"\nwrites = [\"out\"]",
                &[
                    "task `a`: depends_on names `nope`, which is not a task",
                    "the dependencies form a cycle: a → b → a",
                    "task `c` takes the inputs of `a` but does not depend on it",
                    "task `c` and task `d` may run at the same time and both write `out`",
                ],
            ),
            (
                "two separate cycles, and a task that depends on itself",
                "[[task]]\nid = \"a\"\nprompt = \"x\"\ndepends_on = [\"b\"]\n[[task]]\nid = \"b\"\nprompt = \"x\"\ndepends_on = [\"a\"]\n[[task]]\nid = \"c\"\nprompt = \"x\"\ndepends_on = [\"d\"]\n[[task]]\nid = \"d\"\nprompt = \"x\"\ndepends_on = [\"c\", \"d\"]",
                &[
                    "a cycle: a → b → a",
                    "a cycle: c → d → c",
                    "task `d` names itself in its depends_on; remove `d` from it",
                ],
            ),
            (
                "a task without an id still has its names checked, and a stray top-level key",
                "title = \"t\"\n[[task]]\nid = \"a\"\nprompt = \"\"\nbogus = 1\n[[task]]\nprompt = \"y\"\ndepends_on = [\"ghost\"]\nwrites = [\"agents/x\"]",
                &[
                    "unknown field `title`",
                    "task `a`: unknown field `bogus`",
                    "task `a`: no `prompt`",
                    "task 2: no `id`",
                    "task 2: writes `agents/x`: `agents/` is the runtime's",
                    "task 2: depends_on names `ghost`, which is not a task",
                ],
            ),
            ("an empty task list", "task = []", &["no `[[task]]` entries"]),
            ("task as a value", "task = \"a\"", &["`task` must be `[[task]]` entries"]),
        ];
        for (name, text, want) in cases {
            let found = problems(text);
            for says in *want {
                assert!(found.iter().any(|p| p.contains(says)), "{name}: no {says:?} in {found:#?}");
            }
            // Nothing twice, and nothing else.
            assert_eq!(found.len(), want.len(), "{name}: {found:#?}");
        }
    }
}
