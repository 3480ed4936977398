//! From a call to an argv array, exactly as seed 001 maps it:
//!
//! - flags `--name value` in declared order, then positional parameters in
//!   declared order (a positional array, always last, takes the rest);
//! - a boolean true becomes `--name`, false is omitted;
//! - an array becomes a repeated `--name v1 --name v2`;
//! - defaults fill parameters that were not given; types and enum values are
//!   checked; a missing required parameter is an error.
//!
//! The result is a `Vec<String>` handed to the program as its arguments: no
//! shell ever sees it, so `; rm -rf /`, `$( )`, backticks and newlines stay
//! literal values.
//!
//! A call comes either as JSON arguments ([`build_argv`], for
//! `hub call <tool> --json '{…}'`) or as a tool's own command line
//! ([`parse_command_line`], for `log-search --keyword timeout --limit 50`),
//! read by the one flag grammar ([`clix_command::flags::typed`]) that MCP
//! tools use too.

use std::fmt::Write as _;

use clix_command::flags::typed::{self, ArgError, Param};
use serde_json::{Map, Value};

use crate::manifest::Manifest;

/// The manifest's parameters as the flag grammar reads them.
fn params(m: &Manifest) -> Vec<Param> {
    m.parameters.iter().map(|p| p.as_param()).collect()
}

/// Check JSON arguments against the manifest and fill in defaults. Absent
/// keys and `null` values count as not given; a key the manifest does not
/// declare is refused (a hub tool takes nothing it does not declare).
pub(crate) fn check_args(m: &Manifest, args: &Map<String, Value>) -> Result<Map<String, Value>, ArgError> {
    let params = params(m);
    typed::refuse_unknown(&params, args)?;
    let filled: Map<String, Value> = m
        .parameters
        .iter()
        .filter_map(|p| {
            Some((p.name.clone(), args.get(&p.name).filter(|v| !v.is_null()).or(p.default.as_ref())?.clone()))
        })
        .collect();
    typed::check(&params, &filled)?;
    Ok(filled)
}

/// Build the argv (arguments after the program) of a call from JSON arguments.
pub(crate) fn build_argv(m: &Manifest, args: &Map<String, Value>) -> Result<Vec<String>, ArgError> {
    let args = check_args(m, args)?;
    let mut argv = Vec::new();
    for p in m.parameters.iter().filter(|p| !p.positional) {
        let Some(v) = args.get(&p.name) else { continue };
        let flag = format!("--{}", p.name);
        match v {
            Value::Bool(true) => argv.push(flag),
            Value::Bool(false) => {}
            Value::Array(items) => {
                for item in items {
                    argv.push(flag.clone());
                    argv.push(scalar(item));
                }
            }
            other => {
                argv.push(flag);
                argv.push(scalar(other));
            }
        }
    }
    let mut positionals = Vec::new();
    for p in m.parameters.iter().filter(|p| p.positional) {
        match args.get(&p.name) {
            Some(Value::Array(items)) => positionals.extend(items.iter().map(scalar)),
            Some(v) => positionals.push(scalar(v)),
            None => {}
        }
    }
    // A positional value that looks like an option would be read as one by
    // the tool: `--` ends its options first.
    if positionals.iter().any(|v| v.starts_with('-')) {
        argv.push("--".into());
    }
    argv.extend(positionals);
    Ok(argv)
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Parse a tool's own command line (the words after its name) into checked
/// JSON arguments with defaults filled in; `--help` / `-h` give
/// [`ArgError::Help`].
pub(crate) fn parse_command_line(m: &Manifest, words: &[String]) -> Result<Map<String, Value>, ArgError> {
    let args = typed::parse(&params(m), words)?;
    check_args(m, &args)
}

/// The generated usage of a tool: synopsis, description, parameters with
/// types, defaults and enum values, and the manifest's examples.
pub fn usage(m: &Manifest) -> String {
    let params = params(m);
    let synopsis = typed::synopsis(&params);
    let mut text =
        if synopsis.is_empty() { format!("usage: {}\n", m.name) } else { format!("usage: {} {synopsis}\n", m.name) };
    let _ = writeln!(text, "{}", m.description);
    if !params.is_empty() {
        let _ = write!(text, "\nparameters:\n{}", typed::table(&params));
    }
    if !m.examples.is_empty() {
        text.push_str("\nexamples:\n");
        for e in &m.examples {
            let _ = writeln!(text, "  {e}");
        }
    }
    text
}

#[cfg(test)]
mod tests;
