//! The `run` design: clix's own tool, exactly as `clix ask` offers it.

use std::time::Instant;

use clix_agent::Tools;
use clix_engine::{CancelHandle, Engine, EngineConfig};
use serde_json::Value;

use super::{ToolSpec, optional_string_arg, string_arg};
use crate::trace::TracedCall;

/// The `run` tool of one attempt: one engine, so `cd` and variables persist.
pub struct RunTools {
    // Boxed: an engine is large, and the executor holds one design at a time.
    engine: Box<Engine>,
}

impl RunTools {
    /// Starts the engine the model's calls go to.
    pub async fn open(config: EngineConfig) -> Result<Self, clix_engine::EngineError> {
        Ok(RunTools { engine: Box::new(Engine::new(config).await?) })
    }

    /// The `run` tool's definition, as `clix ask` offers it (generated from
    /// this engine's catalog).
    pub fn spec(&self) -> ToolSpec {
        let mut specs = Tools::specs(&*self.engine);
        specs.pop().unwrap_or_else(|| ToolSpec {
            name: "run".into(),
            description: String::new(),
            parameters: Value::Null,
        })
    }

    /// The system prompt's sentences on the `run` tool, as `clix ask` has them.
    pub(crate) fn guidance(&self) -> String {
        Tools::guidance(&*self.engine)
    }

    /// Ends the line in flight (the attempt's deadline).
    pub(crate) fn cancel_handle(&self) -> CancelHandle {
        self.engine.cancel_handle()
    }

    /// One call: the line through Layer 1 and Layer 2.
    pub async fn call(&mut self, arguments: &Value) -> TracedCall {
        let parsed = string_arg(arguments, "command").and_then(|c| Ok((c, optional_string_arg(arguments, "stdin")?)));
        let (command, stdin) = match parsed {
            Ok(p) => p,
            Err(e) => {
                return TracedCall::refused("run", arguments, format!("run: {e}; call it as {{\"command\": \"ls\"}}"));
            }
        };
        let started = Instant::now();
        let out = self.engine.run(command, stdin.map(str::as_bytes)).await;
        TracedCall {
            tool: "run".into(),
            arguments: arguments.clone(),
            text: out.text,
            images: out.images,
            stdout: String::from_utf8_lossy(&out.raw.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.raw.stderr).into_owned(),
            exit_code: out.exit_code,
            duration: started.elapsed(),
            stage_failed: !out.failed_stages.is_empty(),
        }
    }
}
