//! Calls as small models make them, turned into the calls they meant.
//!
//! A tool call the model wrote as text. Small models (Qwen2.5-Coder-1.5B
//! among them) often answer with the call as JSON in a ```json fence or a
//! `<tool_call>` tag instead of a real call; a server whose parser does not
//! take it hands it back as plain text, and the loop would end with that
//! text as the "answer". When the whole call is there (a tool offered, its
//! arguments an object), it is run as the call it was meant to be.
//!
//! A script shown instead of run. Asked to do something, small models
//! answer with the script in a ```bash fence and stop; when nothing has
//! run yet, the loop runs what the fences show as the call it should have
//! been (the policy gate and the sandbox apply as to any call).
//!
//! A command line sent to a tool named after its program: Qwen2.5-Coder-1.5B
//! calls `grep` with `{"command": "grep -c ERROR app.log"}` when the only
//! tool is `run`. When exactly one offered tool takes a `command`, the call
//! goes to it, and the conversation shows it so.

use serde_json::Value;

use crate::message::{ToolCall, ToolSpec};

/// The call written in `text`, if `text` holds exactly one: a JSON object
/// `{"name": <an offered tool>, "arguments": {…}}` (or `"parameters"`), alone
/// or in one fenced block or `<tool_call>` tag, prose around it allowed.
pub(super) fn call_in_text(text: &str, tools: &[ToolSpec], step: u32) -> Option<ToolCall> {
    let mut found = candidates(text).filter_map(|body| parse(body, tools));
    let (name, arguments) = found.next()?;
    if found.next().is_some() {
        return None;
    }
    Some(ToolCall { id: format!("text_call_{step}"), name, arguments: arguments.to_string() })
}

/// The bodies that may hold a call: the whole text, every fenced block,
/// every `<tool_call>` tag.
fn candidates(text: &str) -> impl Iterator<Item = &str> {
    let whole = std::iter::once(text.trim()).filter(|t| t.starts_with('{'));
    whole.chain(between(text, "```", "```").map(strip_language)).chain(between(text, "<tool_call>", "</tool_call>"))
}

/// The texts between each `open` and the next `close`.
fn between<'t>(text: &'t str, open: &'static str, close: &'static str) -> impl Iterator<Item = &'t str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let start = rest.find(open)? + open.len();
        let len = rest[start..].find(close)?;
        let body = &rest[start..start + len];
        rest = &rest[start + len + close.len()..];
        Some(body)
    })
}

/// A fence's body without its language tag (```json).
fn strip_language(body: &str) -> &str {
    match body.split_once('\n') {
        Some((tag, rest)) if !tag.trim_start().starts_with('{') => rest,
        _ => body,
    }
}

fn parse(body: &str, tools: &[ToolSpec]) -> Option<(String, Value)> {
    let value: Value = serde_json::from_str(body.trim()).ok()?;
    let name = value.get("name")?.as_str()?;
    if !tools.iter().any(|t| t.name == name) {
        return None;
    }
    let arguments = value.get("arguments").or_else(|| value.get("parameters"))?;
    // Some models send the arguments as a JSON string, as the wire format has them.
    let arguments = match arguments {
        Value::String(s) => serde_json::from_str(s).ok()?,
        other => other.clone(),
    };
    arguments.is_object().then(|| (name.to_string(), arguments))
}

/// The shell commands `text` shows: every fenced block marked bash, sh,
/// shell or zsh whole, and the `$ `-prompted lines of a console or untagged
/// block, in order. A last fence the reply never closed counts to its end.
pub(super) fn shown_script(text: &str) -> Option<String> {
    let lines: Vec<&str> = fences(text).flat_map(shell_lines).collect();
    let script = lines.join("\n").trim().to_string();
    (!script.is_empty()).then_some(script)
}

/// The call that runs `script` through the one offered tool that takes a `command`.
pub(super) fn script_call(script: &str, tools: &[ToolSpec], step: u32) -> Option<ToolCall> {
    let shell = shell_tool(tools)?;
    let arguments = serde_json::json!({"command": script});
    Some(ToolCall { id: format!("shown_{step}"), name: shell.name.clone(), arguments: arguments.to_string() })
}

/// The bodies of the fenced blocks of `text`, the last one to the end of
/// the text when it is never closed.
fn fences(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let current = rest?;
        let start = current.find("```")? + 3;
        match current[start..].find("```") {
            Some(len) => {
                rest = Some(&current[start + len + 3..]);
                Some(&current[start..start + len])
            }
            None => {
                rest = None;
                Some(&current[start..])
            }
        }
    })
}

/// The shell lines of one fence's body (its first line is the language tag).
fn shell_lines(body: &str) -> Vec<&str> {
    let (tag, rest) = body.split_once('\n').unwrap_or((body, ""));
    match tag.trim().to_ascii_lowercase().as_str() {
        "bash" | "sh" | "shell" | "zsh" => rest.lines().collect(),
        "console" | "" => rest.lines().filter_map(|l| l.strip_prefix("$ ")).collect(),
        _ => Vec::new(),
    }
}

/// What the model is told when it calls a tool that is not offered: the
/// tools there are, with their arguments, and, when one of them takes a
/// command line, how to run the command it named through it. Small models
/// call commands as tools: Qwen2.5-Coder-1.5B called `csv`, `write` and
/// `help` with arguments of their own, and stopped at a bare "unknown tool".
pub fn unknown_tool_text(name: &str, tools: &[ToolSpec]) -> String {
    let offered: Vec<String> = tools.iter().map(signature).collect();
    let mut text = format!("[error] unknown tool {name:?}. The tools are: {}.", offered.join(", "));
    let a_word = !name.is_empty()
        && name.len() <= 40
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if let (true, Some(shell)) = (a_word, shell_tool(tools)) {
        let example = serde_json::json!({"command": format!("{name} --help")});
        text.push_str(&format!(
            " {name} is not a tool; if it is a command, run it through {} with the whole command line, e.g. {example}.",
            shell.name
        ));
    }
    text
}

/// `run(command, stdin?)`: a tool's name and arguments, the optional ones
/// last and marked.
fn signature(tool: &ToolSpec) -> String {
    let required: Vec<&str> = tool
        .parameters
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let names = tool.parameters.get("properties").and_then(Value::as_object).into_iter().flat_map(|p| p.keys());
    let (needed, optional): (Vec<&String>, Vec<&String>) = names.partition(|n| required.contains(&n.as_str()));
    let args: Vec<String> = needed.into_iter().cloned().chain(optional.into_iter().map(|n| format!("{n}?"))).collect();
    format!("{}({})", tool.name, args.join(", "))
}

/// The one offered tool that takes a `command`, if exactly one does.
fn shell_tool(tools: &[ToolSpec]) -> Option<&ToolSpec> {
    let mut shells = tools.iter().filter(|t| t.parameters.pointer("/properties/command").is_some());
    match (shells.next(), shells.next()) {
        (Some(shell), None) => Some(shell),
        _ => None,
    }
}

/// Renames `call` to the one offered tool that takes a `command` when the
/// tool it names is not offered and its arguments hold a command line.
pub(super) fn route_command_call(call: &mut ToolCall, tools: &[ToolSpec]) {
    if tools.iter().any(|t| t.name == call.name) {
        return;
    }
    let has_command = serde_json::from_str::<Value>(&call.arguments)
        .is_ok_and(|args| args.get("command").and_then(Value::as_str).is_some_and(|c| !c.trim().is_empty()));
    if has_command && let Some(shell) = shell_tool(tools) {
        tracing::debug!(called = %call.name, tool = %shell.name, "a command line sent to a tool that is not offered");
        call.name = shell.name.clone();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tools() -> Vec<ToolSpec> {
        let spec = |name: &str, parameters| ToolSpec { name: name.into(), description: String::new(), parameters };
        vec![
            spec("run", json!({"properties": {"command": {"type": "string"}}})),
            spec("read_file", json!({"properties": {"path": {"type": "string"}}})),
        ]
    }

    #[test]
    fn scripts_shown_in_fences_become_the_call() {
        let cases = [
            ("Run this:\n```bash\ngrep -c ERROR app.log\n```", "grep -c ERROR app.log"),
            ("```sh\nls\n```", "ls"),
            ("```\n$ wc -l app.log\n  42 app.log\n```", "wc -l app.log"),
            ("```console\n$ cd src\n$ ls\nmain.rs\n```", "cd src\nls"),
            ("```Shell\nfor i in 1 2; do\n  echo $i\ndone\n```", "for i in 1 2; do\n  echo $i\ndone"),
            ("First:\n```bash\nmkdir out\n```\nthen:\n```zsh\ntouch out/a\n```", "mkdir out\ntouch out/a"),
            // Never closed: the reply ended inside the fence.
            ("```bash\n#!/bin/bash\necho hi\n", "#!/bin/bash\necho hi"),
            // Only the shell fences of a reply with others.
            ("```python\nprint(1)\n```\n```bash\npython3 x.py\n```", "python3 x.py"),
        ];
        for (text, command) in cases {
            let script = shown_script(text).unwrap_or_else(|| panic!("no script in {text:?}"));
            let call = script_call(&script, &tools(), 2).unwrap_or_else(|| panic!("no call for {text:?}"));
            assert_eq!((call.name.as_str(), call.id.as_str()), ("run", "shown_2"), "{text:?}");
            let args: Value = serde_json::from_str(&call.arguments).unwrap();
            assert_eq!(args, json!({"command": command}), "{text:?}");
        }
        for text in [
            "There are 3.",
            "```json\n{\"a\": 1}\n```",
            "```python\nprint(1)\n```",
            "`ls` lists files",
            "```bash\n```",
            "```\nplain output\n```",
        ] {
            assert_eq!(shown_script(text), None, "{text:?}");
        }
        // No single tool to run it with.
        let two_shells = [tools(), tools()].concat();
        assert_eq!(script_call("ls", &two_shells, 1), None);
    }

    #[test]
    fn an_unknown_tool_is_answered_with_the_tools_and_how_to_run_a_command() {
        let mut tools = tools();
        tools[0].parameters = json!({"properties": {"stdin": {}, "command": {}}, "required": ["command"]});
        tools[1].parameters = json!({"properties": {"path": {}, "limit": {}, "offset": {}}, "required": ["path"]});
        let text = unknown_tool_text("csv", &tools);
        assert_eq!(
            text,
            "[error] unknown tool \"csv\". The tools are: run(command, stdin?), read_file(path, limit?, offset?). \
             csv is not a tool; if it is a command, run it through run with the whole command line, e.g. \
             {\"command\":\"csv --help\"}."
        );
        // No example for a name that is not a word, nor without one shell tool.
        assert!(!unknown_tool_text("rm -rf /; x", &tools).contains("e.g."));
        assert!(!unknown_tool_text("csv", &tools[1..]).contains("e.g."));
        assert!(unknown_tool_text("csv", &tools[1..]).ends_with("The tools are: read_file(path, limit?, offset?)."));
    }

    #[test]
    fn a_command_line_sent_to_a_program_s_name_goes_to_the_shell_tool() {
        let routed = |name: &str, arguments: &str, tools: &[ToolSpec]| {
            let mut call = ToolCall { id: "c".into(), name: name.into(), arguments: arguments.into() };
            route_command_call(&mut call, tools);
            call.name
        };
        assert_eq!(routed("grep", r#"{"command": "grep -c ERROR app.log"}"#, &tools()), "run");
        // Offered tools, calls without a command line, and an unclear target stay as they are.
        assert_eq!(routed("read_file", r#"{"command": "x"}"#, &tools()), "read_file");
        assert_eq!(routed("grep", r#"{"pattern": "ERROR"}"#, &tools()), "grep");
        assert_eq!(routed("grep", r#"{"command": " "}"#, &tools()), "grep");
        assert_eq!(routed("grep", "not json", &tools()), "grep");
        let two_shells = [tools(), tools()].concat();
        assert_eq!(routed("grep", r#"{"command": "ls"}"#, &two_shells), "grep");
    }

    #[test]
    fn calls_written_as_text_are_found() {
        let cases = [
            ("```json\n{\"name\": \"run\", \"arguments\": {\"command\": \"wc -l app.log\"}}\n```", "run"),
            ("I will count them.\n```\n{\"name\":\"run\",\"arguments\":{\"command\":\"wc -l app.log\"}}\n```", "run"),
            ("<tool_call>\n{\"name\": \"run\", \"arguments\": {\"command\": \"wc -l app.log\"}}\n</tool_call>", "run"),
            ("{\"name\": \"run\", \"arguments\": \"{\\\"command\\\": \\\"wc -l app.log\\\"}\"}", "run"),
            ("{\"name\": \"run\", \"parameters\": {\"command\": \"wc -l app.log\"}}", "run"),
        ];
        for (text, name) in cases {
            let call = call_in_text(text, &tools(), 3).unwrap_or_else(|| panic!("no call found in {text:?}"));
            assert_eq!((call.name.as_str(), call.id.as_str()), (name, "text_call_3"), "{text:?}");
            let args: Value = serde_json::from_str(&call.arguments).unwrap();
            assert_eq!(args, json!({"command": "wc -l app.log"}), "{text:?}");
        }
    }

    #[test]
    fn answers_that_are_not_one_whole_call_stay_answers() {
        let cases = [
            "There are 3 ERROR lines.",
            "```json\n{\"errors\": 3}\n```",
            // A tool that is not offered.
            "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n```",
            // Arguments that are not an object.
            "```json\n{\"name\": \"run\", \"arguments\": \"ls\"}\n```",
            "```json\n{\"name\": \"run\"}\n```",
            // Two calls: which one was meant is not clear.
            "```\n{\"name\":\"run\",\"arguments\":{\"command\":\"a\"}}\n```\n```\n{\"name\":\"run\",\"arguments\":{\"command\":\"b\"}}\n```",
            // An unclosed fence.
            "```json\n{\"name\": \"run\", \"arguments\": {\"command\": \"ls\"}}",
        ];
        for text in cases {
            assert_eq!(call_in_text(text, &tools(), 1), None, "{text:?}");
        }
    }
}
