//! A tool's `inputSchema` as command-line flags: the parameters read from
//! the schema; the words of a call read into the tool's arguments and its
//! help written by the one flag grammar ([`clix_command::flags::typed`])
//! that hub tools use too.

use clix_command::flags::typed::{self, ArgError};
pub use clix_command::flags::typed::{Kind, Param};
use serde_json::{Map, Value};

/// One tool of a server, as a subcommand.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// Its name: the subcommand.
    pub name: String,
    /// What it does, as the server says.
    pub description: String,
    /// Its parameters: the required ones, then the others (each by name).
    pub params: Vec<Param>,
    /// The `inputSchema` as the server gave it: what a client that offers
    /// the tool to a model directly sends.
    pub input_schema: Map<String, Value>,
    /// The shape of its structured result, read from its `outputSchema`
    /// (`{orders:[{id,status}]}`); empty when it declares none.
    pub output: String,
}

impl Tool {
    /// The tool with its parameters read from `schema` (`$ref`s into
    /// `$defs` followed; `anyOf` with `null` read as the other type).
    pub fn from_schema(name: &str, description: &str, schema: &Map<String, Value>) -> Tool {
        let required: Vec<&str> =
            schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        let mut params = schema
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(pname, prop)| {
                let resolved = resolve(schema, prop, 0);
                let description = [prop, &resolved]
                    .iter()
                    .find_map(|v| v.get("description").and_then(Value::as_str))
                    .unwrap_or_default()
                    .to_string();
                Param {
                    name: pname.clone(),
                    kind: kind(schema, &resolved, 0),
                    required: required.contains(&pname.as_str()),
                    default: prop.get("default").or_else(|| resolved.get("default")).cloned(),
                    positional: false,
                    description,
                }
            })
            .collect::<Vec<Param>>();
        // The required first: the usage line reads as the call is written
        // (serde_json's map has lost the schema's own order).
        params.sort_by_key(|p| !p.required);
        Tool {
            name: name.into(),
            description: description.trim().into(),
            params,
            input_schema: schema.clone(),
            output: String::new(),
        }
    }

    /// The tool with the shape of its result read from `output_schema`.
    pub fn with_output(mut self, output_schema: Option<&Map<String, Value>>) -> Tool {
        self.output = output_schema.map(|schema| shape(schema, &Value::Object(schema.clone()))).unwrap_or_default();
        self
    }

    /// The first line of the description, for a server's list of tools.
    pub fn summary(&self) -> &str {
        self.description.lines().next().unwrap_or_default()
    }

    /// `TOOL --a <string> [--b <integer>]`: how it is called, its flags spelled out.
    pub fn synopsis(&self) -> String {
        let flags = typed::synopsis(&self.params);
        if flags.is_empty() { self.name.clone() } else { format!("{} {flags}", self.name) }
    }

    /// `usage: SERVER TOOL --a <string> [--b <integer>]`.
    pub fn usage(&self, server: &str) -> String {
        format!("usage: {server} {}", self.synopsis())
    }

    /// `SERVER TOOL --help`: what it does, its usage, the shape of its
    /// result, then each parameter with its type, whether it is required,
    /// its default and its values.
    pub fn help(&self, server: &str) -> String {
        let mut out = format!("{server} {}", self.name);
        if !self.description.is_empty() {
            out.push_str(": ");
            out.push_str(&self.description);
        }
        out.push_str(&format!("\n\n{}\n", self.usage(server)));
        if !self.output.is_empty() {
            out.push_str(&format!("output (JSON): {}\n", self.output));
        }
        out.push_str(&format!("\nparameters:\n{}", typed::table(&self.params)));
        out
    }

    /// The tool's arguments from `argv` (the words after the tool's name).
    /// `Ok(None)` asks for the help; an error is a usage error (exit 2)
    /// that ends with the usage line.
    pub fn arguments(&self, server: &str, argv: &[String]) -> Result<Option<Map<String, Value>>, String> {
        match typed::parse(&self.params, argv) {
            Ok(args) => Ok(Some(args)),
            Err(ArgError::Help) => Ok(None),
            Err(e) => Err(format!("{server} {}: {e}\n{}", self.name, self.usage(server))),
        }
    }
}

/// Depth past which `$ref`s are not followed (a schema that refers to itself).
const MAX_REF_DEPTH: usize = 8;

/// `prop` with a `$ref` (alone, or the only member of `allOf`) replaced by
/// what it points to in `root`, and an `anyOf`/`oneOf` with `null` by its other member.
fn resolve(root: &Map<String, Value>, prop: &Value, depth: usize) -> Value {
    if depth > MAX_REF_DEPTH {
        return prop.clone();
    }
    if let Some(target) = prop.get("$ref").and_then(Value::as_str) {
        let mut at = target.strip_prefix("#/").map(|_| root);
        let mut found = None;
        for key in target.trim_start_matches("#/").split('/') {
            found = at.and_then(|obj| obj.get(key));
            at = found.and_then(Value::as_object);
        }
        return found.map(|v| resolve(root, v, depth + 1)).unwrap_or(Value::Null);
    }
    for combinator in ["allOf", "anyOf", "oneOf"] {
        if let Some(members) = prop.get(combinator).and_then(Value::as_array) {
            let real: Vec<&Value> =
                members.iter().filter(|m| m.get("type").and_then(Value::as_str) != Some("null")).collect();
            if let [one] = real.as_slice() {
                return resolve(root, one, depth + 1);
            }
        }
    }
    prop.clone()
}

/// Keys of an object a result's shape names before `…`.
const SHAPE_KEYS: usize = 16;
/// Objects nested deeper than this are shown as `{…}`.
const SHAPE_DEPTH: usize = 3;

/// A result's shape, compact enough for a tool list: an object as its keys
/// (`{a,b:[{c}]}`), an array as `[…]` of its items, a plain value as
/// nothing. Enough to write the `jq` filter without calling the tool first.
fn shape(root: &Map<String, Value>, prop: &Value) -> String {
    shape_within(root, prop, 0, 0)
}

/// [`shape`] with `objects` the objects around `prop` and `nesting` every
/// level (arrays too), so a schema whose arrays refer to themselves ends.
fn shape_within(root: &Map<String, Value>, prop: &Value, objects: usize, nesting: usize) -> String {
    if nesting > MAX_REF_DEPTH {
        return "…".into();
    }
    let prop = resolve(root, prop, 0);
    if let Some(properties) = prop.get("properties").and_then(Value::as_object) {
        if objects >= SHAPE_DEPTH {
            return "{…}".into();
        }
        let mut keys: Vec<String> = properties
            .iter()
            .take(SHAPE_KEYS)
            .map(|(key, value)| match shape_within(root, value, objects + 1, nesting + 1) {
                inner if inner.is_empty() => key.clone(),
                inner => format!("{key}:{inner}"),
            })
            .collect();
        if properties.len() > SHAPE_KEYS {
            keys.push("…".into());
        }
        return format!("{{{}}}", keys.join(","));
    }
    match prop.get("items") {
        Some(items) => format!("[{}]", shape_within(root, items, objects, nesting + 1)),
        None => String::new(),
    }
}

/// The flag type of a resolved property.
fn kind(root: &Map<String, Value>, prop: &Value, depth: usize) -> Kind {
    if let Some(values) = prop.get("enum").and_then(Value::as_array) {
        return Kind::Enum(values.clone());
    }
    let ty = match prop.get("type") {
        Some(Value::String(t)) => Some(t.as_str()),
        // `["string", "null"]`: the other type.
        Some(Value::Array(types)) => {
            let real: Vec<&str> = types.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect();
            if let [one] = real.as_slice() { Some(*one) } else { None }
        }
        _ => None,
    };
    match ty {
        Some("string") => Kind::String,
        Some("integer") => Kind::Integer,
        Some("number") => Kind::Number,
        Some("boolean") => Kind::Boolean,
        Some("array") if depth == 0 => {
            let item = prop.get("items").map(|i| resolve(root, i, 0)).unwrap_or(Value::Null);
            match kind(root, &item, depth + 1) {
                Kind::Array(_) | Kind::Json => Kind::Json,
                item => Kind::Array(Box::new(item)),
            }
        }
        _ => Kind::Json,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A schema as MCPServer writes it (an enum behind `$ref`, defaults),
    /// plus the shapes other SDKs write (`anyOf` with null, a type list).
    fn tool() -> Tool {
        let schema = json!({
            "type": "object",
            "properties": {
                "color": {"$ref": "#/$defs/Color"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "ids": {"type": "array", "items": {"type": "integer"}},
                "times": {"type": "integer", "default": 1, "description": "How often."},
                "ratio": {"type": "number"},
                "loud": {"type": "boolean", "default": false},
                "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null},
                "owner_name": {"type": ["string", "null"]},
                "options": {"type": "object", "additionalProperties": true}
            },
            "required": ["color"],
            "$defs": {"Color": {"enum": ["red", "green", "blue"], "type": "string"}}
        });
        Tool::from_schema("paint", "Paints.\nMore words.", schema.as_object().unwrap())
    }

    fn args(line: &str) -> Result<Option<Map<String, Value>>, String> {
        let words: Vec<String> = line.split_whitespace().map(String::from).collect();
        tool().arguments("fx", &words)
    }

    /// A result's shape as the tool list shows it, from output schemas as
    /// MCPServer writes them (`$ref`s into `$defs`, optional fields as
    /// `anyOf` with null) and the limits that keep it short.
    #[test]
    fn a_result_shape_names_the_keys_a_filter_needs() {
        let orders = json!({
            "type": "object",
            "properties": {"orders": {"type": "array", "items": {"$ref": "#/$defs/Order"}}, "total": {"type": "integer"}},
            "$defs": {"Order": {"type": "object", "properties": {
                "id": {"type": "string"},
                "customer": {"anyOf": [{"$ref": "#/$defs/Customer"}, {"type": "null"}]},
                "tags": {"type": "array", "items": {"type": "string"}}
            }}, "Customer": {"type": "object", "properties": {"email": {"type": "string"}, "deep": {
                "type": "object", "properties": {"x": {"type": "string"}}}}}}
        });
        let wide: Map<String, Value> = (0..20).map(|i| (format!("k{i:02}"), json!({"type": "string"}))).collect();
        let rows: &[(Option<Value>, &str)] = &[
            (Some(orders), "{orders:[{customer:{deep:{…},email},id,tags:[]}],total}"),
            (Some(json!({"type": "object", "properties": {"result": {"type": "string"}}})), "{result}"),
            (
                Some(json!({"type": "object", "properties": wide})),
                "{k00,k01,k02,k03,k04,k05,k06,k07,k08,k09,k10,k11,k12,k13,k14,k15,…}",
            ),
            (
                Some(json!({"$defs": {"A": {"type": "array", "items": {"$ref": "#/$defs/A"}}}, "$ref": "#/$defs/A"})),
                "[[[[[[[[[…]]]]]]]]]",
            ),
            (None, ""),
        ];
        for (schema, want) in rows {
            let tool = tool().with_output(schema.as_ref().and_then(Value::as_object));
            assert_eq!(tool.output, *want);
            assert_eq!(tool.help("fx").contains("output (JSON): "), !want.is_empty(), "{}", tool.help("fx"));
        }
        assert_eq!(
            tool().synopsis(),
            "paint --color <red|green|blue> [--ids <integer>...] [--loud] [--note <string>] [--options <JSON>] \
             [--owner_name <string>] [--ratio <number>] [--tags <string>...] [--times <integer>]"
        );
    }

    #[test]
    fn each_type_reads_its_flag() {
        let rows: &[(&str, Value)] = &[
            ("--color red", json!({"color": "red"})),
            ("--color=blue --note hi", json!({"color": "blue", "note": "hi"})),
            ("--color red --times 3 --ratio 2.5", json!({"color": "red", "times": 3, "ratio": 2.5})),
            ("--color red --ratio 2", json!({"color": "red", "ratio": 2})),
            ("--color red --loud", json!({"color": "red", "loud": true})),
            ("--color red --loud=false", json!({"color": "red", "loud": false})),
            ("--color red --tags a --tags b", json!({"color": "red", "tags": ["a", "b"]})),
            ("--color red --ids 1 --ids 2", json!({"color": "red", "ids": [1, 2]})),
            ("--color red --owner-name ann", json!({"color": "red", "owner_name": "ann"})),
            ("--color red --options {\"a\":[1]}", json!({"color": "red", "options": {"a": [1]}})),
            ("--json {\"color\":\"green\",\"times\":2}", json!({"color": "green", "times": 2})),
            ("--color red --json {\"color\":\"green\",\"x\":1}", json!({"color": "red", "x": 1})),
        ];
        for (line, want) in rows {
            assert_eq!(args(line), Ok(Some(want.as_object().unwrap().clone())), "{line}");
        }
        assert_eq!(args("--color red --help"), Ok(None));
    }

    #[test]
    fn a_wrong_flag_is_a_usage_error_with_the_usage_line() {
        let rows = [
            ("--color purple", "--color: `purple` is not one of: red, green, blue"),
            ("--times 3", "missing required --color"),
            ("--color red --times x", "--times: expected an integer, got `x`"),
            ("--color red --times 1.5", "--times: expected an integer, got `1.5`"),
            ("--color red --ratio fast", "--ratio: expected a number, got `fast`"),
            ("--color red --loud=maybe", "--loud: a boolean flag takes no value (or =true / =false)"),
            ("--color red --ids one", "--ids: expected an integer, got `one`"),
            ("--color red --tims 2", "unknown parameter --tims (did you mean --times?)"),
            ("--color red --zzz 2", "unknown parameter --zzz (its parameters: --color, --ids"),
            ("--color red extra", "unexpected argument `extra`: every parameter is a flag"),
            ("--color", "--color needs a value"),
            ("--json [1]", "--json takes a JSON object"),
            ("--json {", "--json takes a JSON object ({\"name\": value, ...}): not JSON"),
        ];
        for (line, want) in rows {
            let e = args(line).unwrap_err();
            assert!(e.starts_with("fx paint: ") && e.contains(want), "{line}: {e}");
            assert!(e.ends_with(&tool().usage("fx")), "{line}: {e}");
        }
    }

    #[test]
    fn help_shows_types_defaults_values_and_required_marks() {
        let t = tool();
        assert_eq!(t.summary(), "Paints.");
        assert!(t.usage("fx").starts_with("usage: fx paint --color <red|green|blue> [--ids <integer>...] [--loud]"));
        let help = t.help("fx");
        for want in [
            "fx paint: Paints.\nMore words.",
            "--color <red|green|blue>  one of red, green, blue, required\n",
            "--times <integer>         integer, default 1. How often.\n",
            "--tags <string>           array of string, repeat the flag\n",
            "--note <string>           string\n",
            "--options <JSON>          JSON\n",
            "--json <object>           the arguments (or some of them) as one JSON object",
        ] {
            assert!(help.contains(want), "{want:?} in {help}");
        }
    }
}
