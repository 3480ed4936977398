//! Entry points for the fuzz targets in `fuzz/` (cargo feature `fuzzing`):
//! thin wrappers that reach steps of the agent loop the public API does not
//! expose on their own. Not an API: it exists only with the feature, is
//! hidden from the docs, and may change with the loop.
#![doc(hidden)]

use crate::message::ToolCall;

/// What the loop makes of a model's tool call: the command line and stdin of
/// a `run` call, or the `[error] …` text the model gets back instead. This
/// is the loop's own parser, with its repair of raw control characters
/// (a literal newline or tab inside a JSON string, a slip of small models).
pub fn parse_run_call(call: &ToolCall) -> Result<(String, Option<String>), String> {
    crate::agent::tool_calls::parse_call(call)
}
