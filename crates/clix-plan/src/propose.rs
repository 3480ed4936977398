//! The coordinator's one tool: `propose_plan`. A coordinating model gets
//! this tool and nothing else, so it can schedule but never execute: any
//! other tool it asks for (`run` included) is an unknown tool.

use std::path::PathBuf;

use clix_agent::{Invocation, ToolCall, ToolOutcome, ToolSpec, Tools};
use clix_engine::CancelHandle;
use serde_json::{Value, json};

use crate::plan::Plan;

/// The tool's name.
pub(crate) const TOOL: &str = "propose_plan";

/// `propose_plan`, checking each proposal as `clix plan check` does and
/// keeping the last valid one.
pub struct ProposePlan {
    workspace: PathBuf,
    /// The last proposal that passed, as plan TOML.
    pub accepted: Option<String>,
}

impl ProposePlan {
    /// The tool for a coordinator whose agents will work in `workspace`.
    pub fn new(workspace: PathBuf) -> ProposePlan {
        ProposePlan { workspace, accepted: None }
    }
}

/// A proposal's tasks (JSON objects with the plan file's fields) as plan
/// TOML, the form a person reads and edits.
pub(crate) fn plan_toml(tasks: &Value) -> Result<String, String> {
    let Value::Array(tasks) = tasks else {
        return Err("`tasks` must be a list of task objects".into());
    };
    let cleaned: Vec<Value> = tasks
        .iter()
        .map(|t| match t {
            Value::Object(fields) => Value::Object(
                fields.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), v.clone())).collect(),
            ),
            other => other.clone(),
        })
        .collect();
    toml::to_string(&json!({ "task": cleaned })).map_err(|e| format!("the tasks cannot be written as a plan: {e}"))
}

impl Tools for ProposePlan {
    fn specs(&self) -> Vec<ToolSpec> {
        let list = |what: &str| json!({"type": "array", "items": {"type": "string"}, "description": what});
        vec![ToolSpec {
            name: TOOL.into(),
            description: "Propose the plan: tasks, each done by its own agent. A task starts when every task in its \
                          depends_on is done; tasks without a path between them run at the same time. Each agent \
                          writes in its own folder agents/<id>/ and reads the rest. The plan is checked and any \
                          problem comes back for you to fix."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "tasks": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "id": {"type": "string", "description": "short name: letters, digits, - and _"},
                                "prompt": {"type": "string", "description": "what this task's agent must do, self-contained"},
                                "depends_on": list("ids of tasks that must be done first"),
                                "inputs": list("ids (among depends_on) whose answers and files this task gets"),
                                "writes": list("workspace folders it may write besides its own"),
                                "max_steps": {"type": "integer"},
                                "retries": {"type": "integer"}
                            },
                            "required": ["id", "prompt"]
                        }
                    }
                },
                "required": ["tasks"]
            }),
        }]
    }

    fn guidance(&self) -> String {
        "You are a coordinator. You cannot run commands or read files: you only plan. Split the goal into tasks for \
         agents that can run shell commands in the workspace, with the dependencies between them, and call \
         propose_plan. If it reports problems, fix them and propose again. When it is accepted, answer with one line \
         saying what the plan does."
            .into()
    }

    fn workspace(&self) -> PathBuf {
        self.workspace.clone()
    }

    fn cancel_handle(&self) -> Option<CancelHandle> {
        None
    }

    fn prepare(&self, call: &ToolCall) -> Result<Invocation, String> {
        if call.name != TOOL {
            return Err(format!(
                "[error] unknown tool `{}`: a coordinator cannot execute anything; its only tool is {TOOL}",
                call.name
            ));
        }
        let arguments: Value = serde_json::from_str(&call.arguments)
            .map_err(|e| format!("[error] {TOOL}: the arguments are not JSON ({e}); send {{\"tasks\": [...]}}"))?;
        Ok(Invocation::of(TOOL, arguments))
    }

    async fn run(&mut self, invocation: &Invocation) -> ToolOutcome {
        let started = std::time::Instant::now();
        let checked = plan_toml(invocation.arguments.get("tasks").unwrap_or(&Value::Null))
            .and_then(|text| Plan::parse(&text, "the proposal").map(|plan| (text, plan)).map_err(|e| e.to_string()));
        let (text, exit_code) = match checked {
            Ok((text, plan)) => {
                let layers = plan.layers().len();
                self.accepted = Some(text);
                (
                    format!(
                        "The plan is valid: {} tasks in {layers} layers.\n{}Answer with one line saying what it does.",
                        plan.tasks.len(),
                        plan.render()
                    ),
                    0,
                )
            }
            Err(problems) => (format!("[error] the plan has problems; fix them and propose again:\n{problems}"), 1),
        };
        ToolOutcome {
            text,
            exit_code,
            duration: started.elapsed(),
            images: Vec::new(),
            stage_failed: false,
            ..ToolOutcome::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proposal_becomes_plan_toml_that_parses() {
        let tasks = json!([
            {"id": "a", "prompt": "fetch", "max_steps": null},
            {"id": "b", "prompt": "use it", "depends_on": ["a"], "inputs": ["a"]}
        ]);
        let text = plan_toml(&tasks).unwrap();
        let plan = Plan::parse(&text, "p").unwrap();
        assert_eq!(plan.layers(), vec![vec!["a"], vec!["b"]]);
        assert!(text.contains("[[task]]"), "{text}");
        assert!(plan_toml(&json!("nope")).is_err());
    }
}
