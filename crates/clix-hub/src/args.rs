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
//! ([`parse_command_line`], for `log-search --keyword timeout --limit 50`).

use std::fmt;
use std::fmt::Write as _;

use clix_common::names::did_you_mean;
use serde_json::{Map, Number, Value};

use crate::manifest::{Manifest, ParamType, Parameter, check_value};

/// Why a call's arguments were refused. Every variant is a parameter error
/// (exit code 2 in the seed's contract); show it with [`usage`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ArgError {
    /// `--help` or `-h` was given.
    Help,
    /// A flag (or JSON key) the manifest does not declare.
    Unknown { name: String, suggestion: Option<String> },
    /// A flag that takes a value came last.
    MissingValue { name: String },
    /// A non-array parameter given twice.
    Repeated { name: String },
    /// A value of the wrong type, or not among an enum's values.
    Invalid { name: String, message: String },
    /// Required parameters that were not given and have no default, as
    /// written on a command line (`--keyword`, `<id>` for a positional).
    Missing { names: Vec<String> },
    /// A bare argument that no positional parameter takes.
    ExtraPositional { value: String },
}

impl ArgError {
    /// The seed's exit code for a parameter error.
    pub(crate) const EXIT_CODE: i32 = clix_common::exit::USAGE;
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Help => write!(f, "usage requested"),
            Self::Unknown { name, .. } if name.starts_with('-') => {
                write!(f, "unknown option {name} (parameters are --name; put -- before a value that starts with -)")
            }
            Self::Unknown { name, suggestion: Some(s) } => {
                write!(f, "unknown parameter --{name} (did you mean --{s}?)")
            }
            Self::Unknown { name, suggestion: None } => write!(f, "unknown parameter --{name}"),
            Self::MissingValue { name } => write!(f, "--{name} needs a value"),
            Self::Repeated { name } => write!(f, "--{name} is given more than once"),
            Self::Invalid { name, message } => write!(f, "--{name}: {message}"),
            Self::Missing { names } => write!(f, "missing required {}", names.join(", ")),
            Self::ExtraPositional { value } => write!(f, "unexpected argument `{value}`"),
        }
    }
}

impl std::error::Error for ArgError {}

/// Check JSON arguments against the manifest and fill in defaults. Absent
/// keys and `null` values count as not given.
pub(crate) fn check_args(m: &Manifest, args: &Map<String, Value>) -> Result<Map<String, Value>, ArgError> {
    for key in args.keys() {
        if m.parameter(key).is_none() {
            let suggestion = did_you_mean(key, m.parameters.iter().map(|p| p.name.as_str())).map(str::to_string);
            return Err(ArgError::Unknown { name: key.clone(), suggestion });
        }
    }
    let mut out = Map::new();
    let mut missing = Vec::new();
    for p in &m.parameters {
        let given = args.get(&p.name).filter(|v| !v.is_null());
        match given.or(p.default.as_ref()) {
            Some(v) => {
                check_value(p.ty, &p.values, v)
                    .map_err(|message| ArgError::Invalid { name: p.name.clone(), message })?;
                out.insert(p.name.clone(), v.clone());
            }
            None if p.required && p.positional => missing.push(format!("<{}>", p.name)),
            None if p.required => missing.push(format!("--{}", p.name)),
            None => {}
        }
    }
    if !missing.is_empty() {
        return Err(ArgError::Missing { names: missing });
    }
    Ok(out)
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
/// JSON arguments with defaults filled in.
///
/// `--name value` and `--name=value`; a boolean is `--name` (or
/// `--name=true|false`); an array flag may repeat; `--` ends the flags.
/// Bare words fill the positional parameters in order; a positional
/// parameter may also be given by its flag. `--help` / `-h` give
/// [`ArgError::Help`].
pub(crate) fn parse_command_line<S: AsRef<str>>(m: &Manifest, words: &[S]) -> Result<Map<String, Value>, ArgError> {
    let mut out = Map::new();
    let mut bare: Vec<&str> = Vec::new();
    let mut only_bare = false;
    let mut i = 0;
    while i < words.len() {
        let word = words[i].as_ref();
        i += 1;
        if only_bare || !word.starts_with('-') || word == "-" {
            bare.push(word);
            continue;
        }
        if word == "--" {
            only_bare = true;
            continue;
        }
        if word == "--help" || word == "-h" {
            return Err(ArgError::Help);
        }
        let body = word.strip_prefix("--").unwrap_or(word);
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (body, None),
        };
        let Some(p) = m.parameter(name).filter(|_| word.starts_with("--")) else {
            let suggestion = did_you_mean(name, m.parameters.iter().map(|p| p.name.as_str())).map(str::to_string);
            return Err(ArgError::Unknown { name: name.to_string(), suggestion });
        };
        let value = if p.ty == ParamType::Boolean {
            match inline {
                None | Some("true") => Value::Bool(true),
                Some("false") => Value::Bool(false),
                Some(other) => {
                    return Err(ArgError::Invalid {
                        name: p.name.clone(),
                        message: format!("a boolean flag takes no value (or =true / =false), got `{other}`"),
                    });
                }
            }
        } else {
            let raw = match inline {
                Some(v) => v,
                None if i < words.len() => {
                    i += 1;
                    words[i - 1].as_ref()
                }
                None => return Err(ArgError::MissingValue { name: p.name.clone() }),
            };
            typed(p, raw)?
        };
        put(&mut out, p, value)?;
    }

    let mut rest = bare.into_iter();
    for p in m.parameters.iter().filter(|p| p.positional) {
        if out.contains_key(&p.name) {
            continue;
        }
        if p.ty == ParamType::Array {
            let items = rest.by_ref().map(|w| typed(p, w)).collect::<Result<Vec<_>, _>>()?;
            if !items.is_empty() {
                out.insert(p.name.clone(), Value::Array(items));
            }
        } else if let Some(w) = rest.next() {
            out.insert(p.name.clone(), typed(p, w)?);
        }
    }
    if let Some(extra) = rest.next() {
        return Err(ArgError::ExtraPositional { value: extra.to_string() });
    }
    check_args(m, &out)
}

/// One word of a command line as the parameter's type (an array's items are strings).
fn typed(p: &Parameter, raw: &str) -> Result<Value, ArgError> {
    let invalid = |message: String| ArgError::Invalid { name: p.name.clone(), message };
    match p.ty {
        ParamType::String | ParamType::Array | ParamType::Enum => Ok(Value::String(raw.to_string())),
        ParamType::Boolean => match raw {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(invalid(format!("expected true or false, got `{raw}`"))),
        },
        ParamType::Integer => raw
            .parse::<i64>()
            .map(|n| Value::Number(n.into()))
            .map_err(|_| invalid(format!("expected an integer, got `{raw}`"))),
        ParamType::Number => {
            if let Ok(n) = raw.parse::<i64>() {
                return Ok(Value::Number(n.into()));
            }
            raw.parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| invalid(format!("expected a number, got `{raw}`")))
        }
    }
}

fn put(out: &mut Map<String, Value>, p: &Parameter, value: Value) -> Result<(), ArgError> {
    if p.ty == ParamType::Array {
        match out.entry(p.name.clone()).or_insert_with(|| Value::Array(Vec::new())) {
            Value::Array(items) => items.push(value),
            _ => unreachable!("array parameters only hold arrays"),
        }
        return Ok(());
    }
    if out.contains_key(&p.name) {
        return Err(ArgError::Repeated { name: p.name.clone() });
    }
    out.insert(p.name.clone(), value);
    Ok(())
}

/// The generated usage of a tool: synopsis, description, parameters with
/// types, defaults and enum values, and the manifest's examples.
pub fn usage(m: &Manifest) -> String {
    let mut synopsis = format!("usage: {}", m.name);
    for p in m.parameters.iter().filter(|p| !p.positional) {
        let mut part = format!("--{}", p.name);
        if p.ty != ParamType::Boolean {
            let _ = write!(part, " <{}>", placeholder(p));
        }
        if p.ty == ParamType::Array {
            part.push_str("...");
        }
        if p.required {
            let _ = write!(synopsis, " {part}");
        } else {
            let _ = write!(synopsis, " [{part}]");
        }
    }
    for p in m.parameters.iter().filter(|p| p.positional) {
        let dots = if p.ty == ParamType::Array { "..." } else { "" };
        if p.required {
            let _ = write!(synopsis, " <{}>{dots}", p.name);
        } else {
            let _ = write!(synopsis, " [<{}>{dots}]", p.name);
        }
    }
    let mut text = format!("{synopsis}\n{}\n", m.description);
    if !m.parameters.is_empty() {
        text.push_str("\nparameters:\n");
        let rows: Vec<(String, String)> = m.parameters.iter().map(|p| (left(p), right(p))).collect();
        let width = rows.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
        for (l, r) in rows {
            let _ = writeln!(text, "  {l:width$}  {r}");
        }
    }
    if !m.examples.is_empty() {
        text.push_str("\nexamples:\n");
        for e in &m.examples {
            let _ = writeln!(text, "  {e}");
        }
    }
    text
}

fn placeholder(p: &Parameter) -> String {
    match p.ty {
        ParamType::Enum => p.values.join("|"),
        ParamType::Array => "string".to_string(),
        t => t.as_str().to_string(),
    }
}

fn left(p: &Parameter) -> String {
    if p.positional {
        let dots = if p.ty == ParamType::Array { "..." } else { "" };
        format!("<{}>{dots}", p.name)
    } else if p.ty == ParamType::Boolean {
        format!("--{}", p.name)
    } else {
        format!("--{} <{}>", p.name, placeholder(p))
    }
}

fn right(p: &Parameter) -> String {
    let mut facts = vec![match p.ty {
        ParamType::Array if p.positional => "array, the remaining words".to_string(),
        ParamType::Array => "array, repeat the flag".to_string(),
        ParamType::Boolean => "boolean flag".to_string(),
        t => t.as_str().to_string(),
    }];
    if p.required {
        facts.push("required".into());
    }
    if let Some(d) = &p.default {
        facts.push(format!("default {}", scalar(d)));
    }
    let mut s = facts.join(", ");
    if !p.description.is_empty() {
        let _ = write!(s, ". {}", p.description);
    }
    s
}

#[cfg(test)]
mod tests;
