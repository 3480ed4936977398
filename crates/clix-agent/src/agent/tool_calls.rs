//! Running a reply's tool calls: each through the tools, in order, each
//! answered; a call the tools cannot take (another tool, bad JSON, no
//! command) answered with an error that says what to send. The same call
//! as the step before gets a note: small models repeat a call whose result
//! they already have, and loop on it until the step budget ends the run.

use base64::Engine as _;
use serde_json::Value;

use super::Agent;
use crate::events::Event;
use crate::message::{Image, Message, Role, ToolCall};
use crate::tools::{Tools, call_arguments};

/// Added to the result of a call identical to one of the step before.
pub(crate) const REPEATED_CALL_NOTE: &str = "[note] You made this same call in your previous step. Use what it \
     showed you: answer now if you have what the task asks for, or try a different command.";

impl<T: Tools> Agent<'_, T> {
    /// Runs every call of one reply, in order, and answers each.
    pub(super) async fn run_tool_calls(&mut self, step: u32, calls: &[ToolCall], on_event: &mut dyn FnMut(&Event)) {
        let mut images: Vec<(String, Image)> = Vec::new();
        let previous = std::mem::take(&mut self.last_calls);
        for call in calls {
            if self.interrupt.is_set() {
                self.messages.push(Message::tool_result(&call.id, "[error] interrupted before this call ran", true));
                continue;
            }
            let invocation = match self.engine.prepare(call) {
                Ok(invocation) => invocation,
                Err(message) => {
                    let result = Event::ToolResult {
                        step,
                        id: call.id.clone(),
                        text: message.clone(),
                        exit_code: clix_common::exit::USAGE,
                        duration_ms: 0,
                        images: vec![],
                        changes: None,
                        declined: false,
                    };
                    self.emit(on_event, result);
                    self.messages.push(Message::tool_result(&call.id, message, true));
                    self.last_failed_call = Some(call.arguments.clone());
                    continue;
                }
            };
            let tool_call = Event::ToolCall {
                step,
                id: call.id.clone(),
                tool: invocation.tool.clone(),
                command: invocation.command.clone(),
                stdin: invocation.stdin.clone(),
            };
            self.emit(on_event, tool_call);
            // A tool set may answer a tool it lacks itself (the eval's do):
            // such a call ran nothing.
            self.ran_a_call |= self.tools.iter().any(|t| t.name == call.name);
            let mut out = self.engine.run(&invocation).await;
            let key = (invocation.tool.clone(), invocation.arguments.clone());
            if previous.contains(&key) {
                tracing::debug!(tool = %invocation.tool, "the same call as the step before");
                out.text.push('\n');
                out.text.push_str(REPEATED_CALL_NOTE);
            }
            self.last_calls.push(key);
            let seen: Vec<(String, Image)> = out
                .images
                .iter()
                .map(|i| {
                    let image =
                        Image { mime: i.mime.clone(), data: base64::engine::general_purpose::STANDARD.encode(&i.data) };
                    (i.path.clone(), image)
                })
                .collect();
            let result = Event::ToolResult {
                step,
                id: call.id.clone(),
                text: out.text.clone(),
                exit_code: out.exit_code,
                duration_ms: out.duration.as_millis() as u64,
                images: seen.iter().map(|(_, i)| i.clone()).collect(),
                changes: out.changes.clone(),
                declined: out.declined,
            };
            self.emit(on_event, result);
            // A failed stage the exit code hides is a failure too: the
            // model that got `jq … | awk …`'s empty sum with [exit:0] took
            // it as an answer, or repeated the line and gave up (issue 31).
            let failed = out.exit_code != 0 || out.stage_failed;
            self.last_failed_call = failed.then(|| invocation.command.clone());
            self.messages.push(Message::tool_result(&call.id, out.text, out.exit_code != 0));
            images.extend(seen);
        }
        if !images.is_empty() {
            // Tool results cannot carry images everywhere; the next user turn can.
            let names: Vec<&str> = images.iter().map(|(p, _)| p.as_str()).collect();
            let mut text = format!("[images from see: {}]", names.join(", "));
            let images = if self.images_refused {
                text.push(' ');
                text.push_str(super::model_call::IMAGE_LEFT_OUT);
                Vec::new()
            } else {
                images.into_iter().map(|(_, i)| i).collect()
            };
            self.messages.push(Message { images, ..Message::new(Role::User, text) });
        }
    }
}

/// The command and stdin of a `run` call's arguments, or the error the
/// model gets back (the tool's name is the caller's to check).
pub(crate) fn parse_call(call: &ToolCall) -> Result<(String, Option<String>), String> {
    let args = call_arguments(call)?;
    let command = args.get("command").and_then(Value::as_str).map(str::trim).unwrap_or_default();
    if command.is_empty() {
        return Err(
            "[error] run needs a non-empty \"command\" string, e.g. {\"command\": \"cat README.md | head -20\"}."
                .into(),
        );
    }
    let stdin = args.get("stdin").and_then(Value::as_str).map(str::to_string);
    Ok((command.to_string(), stdin))
}

/// Parses tool-call arguments, forgiving one common slip of small models:
/// raw control characters (a literal newline or tab) inside a JSON string,
/// which are escaped before a second try. Anything else stays an error.
pub(crate) fn lenient_json(text: &str) -> Result<Value, serde_json::Error> {
    let strict = serde_json::from_str(text);
    if strict.is_ok() || !text.chars().any(char::is_control) {
        return strict;
    }
    let mut fixed = String::with_capacity(text.len() + 8);
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        match c {
            _ if escaped => {
                escaped = false;
                fixed.push(c);
            }
            '\\' if in_string => {
                escaped = true;
                fixed.push(c);
            }
            '"' => {
                in_string = !in_string;
                fixed.push(c);
            }
            '\n' if in_string => fixed.push_str("\\n"),
            '\r' if in_string => fixed.push_str("\\r"),
            '\t' if in_string => fixed.push_str("\\t"),
            c if in_string && c.is_control() => fixed.push_str(&format!("\\u{:04x}", c as u32)),
            c => fixed.push(c),
        }
    }
    serde_json::from_str(&fixed).or(strict)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_control_characters_in_strings_are_forgiven() {
        for (raw, command) in [
            ("{\"command\": \"cat a\nwc -l a\"}", "cat a\nwc -l a"),
            ("{\"command\": \"printf 'x\ty'\"}", "printf 'x\ty'"),
            ("{\"command\":\n \"ls\"}", "ls"),
            ("{\"command\": \"echo \\\"a\nb\\\"\"}", "echo \"a\nb\""),
        ] {
            let (got, _) = parse_call(&call("run", raw)).unwrap_or_else(|e| panic!("{raw:?}: {e}"));
            assert_eq!(got, command, "{raw:?}");
        }
        let err = parse_call(&call("run", "{\"command\": \"ls\n")).unwrap_err();
        assert!(err.contains("not valid JSON"), "still an error when the JSON is broken otherwise: {err}");
    }

    fn call(name: &str, args: &str) -> ToolCall {
        ToolCall { id: "c1".into(), name: name.into(), arguments: args.into() }
    }

    #[test]
    fn parse_call_table() {
        assert_eq!(parse_call(&call("run", r#"{"command":"ls"}"#)), Ok(("ls".into(), None)));
        assert_eq!(
            parse_call(&call("run", r#"{"command":"wc -l","stdin":"a\n"}"#)),
            Ok(("wc -l".into(), Some("a\n".into())))
        );
        let cases = [
            (call("run", r#"{"command": "ls"#), "not valid JSON"),
            (call("run", r#"{"cmd":"ls"}"#), "needs a non-empty \"command\""),
            (call("run", ""), "needs a non-empty \"command\""),
        ];
        for (c, needle) in cases {
            let err = parse_call(&c).unwrap_err();
            assert!(err.contains(needle), "{err}");
        }
    }
}
