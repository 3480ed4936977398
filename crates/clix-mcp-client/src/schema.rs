//! A tool's `inputSchema` as command-line flags: the parameters read from
//! the schema, an argv mapped to the tool's arguments (every value checked
//! against its type), and the help a person or a model reads.

use serde_json::{Map, Number, Value};

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

/// One parameter: a flag.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// The property's name (`--name`; `_` may be written `-`).
    pub name: String,
    /// Its type.
    pub kind: Kind,
    /// Whether the schema lists it in `required`.
    pub required: bool,
    /// Its default, when the schema gives one.
    pub default: Option<Value>,
    /// Its description.
    pub description: String,
}

/// A parameter's type, as the flags read it.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// Text.
    String,
    /// A whole number.
    Integer,
    /// Any number.
    Number,
    /// `--flag` or `--flag=false`.
    Boolean,
    /// One of these values.
    Enum(Vec<Value>),
    /// Repeated flags, each an item of this kind.
    Array(Box<Kind>),
    /// A JSON value (an object, or a type the flags do not spell).
    Json,
}

impl Kind {
    /// The word for its value in usage lines.
    fn placeholder(&self) -> String {
        match self {
            Kind::String => "TEXT".into(),
            Kind::Integer => "INT".into(),
            Kind::Number => "NUMBER".into(),
            Kind::Boolean => String::new(),
            Kind::Enum(values) => values.iter().map(shown).collect::<Vec<_>>().join("|"),
            Kind::Array(item) => format!("{}...", item.placeholder()),
            Kind::Json => "JSON".into(),
        }
    }

    /// Its type as the help names it.
    fn name(&self) -> String {
        match self {
            Kind::String => "text".into(),
            Kind::Integer => "integer".into(),
            Kind::Number => "number".into(),
            Kind::Boolean => "boolean".into(),
            Kind::Enum(_) => "one of the values shown".into(),
            Kind::Array(item) => format!("list of {}, one flag each", item.name()),
            Kind::Json => "JSON".into(),
        }
    }
}

/// A JSON value as a flag's text (a string without its quotes).
fn shown(v: &Value) -> String {
    v.as_str().map(String::from).unwrap_or_else(|| v.to_string())
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

    /// `TOOL --a TEXT [--b INT]`: how it is called, its flags spelled out.
    pub fn synopsis(&self) -> String {
        let mut line = self.name.clone();
        for p in &self.params {
            let flag = format!("--{}", p.name);
            let value = p.kind.placeholder();
            let word = if value.is_empty() { flag } else { format!("{flag} {value}") };
            line.push(' ');
            line.push_str(&if p.required { word } else { format!("[{word}]") });
        }
        line
    }

    /// `usage: SERVER TOOL --a TEXT [--b INT] [--json JSON]`.
    pub fn usage(&self, server: &str) -> String {
        format!("usage: {server} {} [--json JSON]", self.synopsis())
    }

    /// `SERVER TOOL --help`: what it does, its usage, then each parameter
    /// with its type, whether it is required, its default, its values.
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
        if !self.params.is_empty() {
            out.push_str("\nparameters:\n");
        }
        for p in &self.params {
            let mut facts = vec![p.kind.name()];
            if p.required {
                facts.insert(0, "required".into());
            }
            // A `null` default is no default: the parameter is simply left out.
            if let Some(d) = p.default.as_ref().filter(|d| !d.is_null()) {
                facts.push(format!("default {}", shown(d)));
            }
            if let Kind::Enum(values) = &p.kind {
                facts[if p.required { 1 } else { 0 }] =
                    format!("one of {}", values.iter().map(shown).collect::<Vec<_>>().join(", "));
            }
            out.push_str(&format!("  --{} ({})", p.name, facts.join("; ")));
            if !p.description.is_empty() {
                out.push_str(&format!(": {}", p.description));
            }
            out.push('\n');
        }
        out.push_str(
            "  --json JSON: the arguments (or some of them) as one JSON object; flags given too take precedence\n",
        );
        out
    }

    /// The tool's arguments from `argv` (the words after the tool's name).
    /// `Ok(None)` asks for the help; an error is a usage error (exit 2).
    pub fn arguments(&self, server: &str, argv: &[String]) -> Result<Option<Map<String, Value>>, String> {
        let usage_error = |msg: String| format!("{server} {}: {msg}\n{}", self.name, self.usage(server));
        let mut args = Map::new();
        let mut from_json = Map::new();
        let mut words = argv.iter();
        while let Some(word) = words.next() {
            if word == "--help" || word == "-h" {
                return Ok(None);
            }
            let Some(flag) = word.strip_prefix("--") else {
                return Err(usage_error(format!(
                    "unexpected `{word}`: every parameter is a flag ({})",
                    self.flags().join(", ")
                )));
            };
            let (flag, inline) = match flag.split_once('=') {
                Some((f, v)) => (f, Some(v.to_string())),
                None => (flag, None),
            };
            if flag == "json" && self.param(flag).is_none() {
                let text = match inline {
                    Some(v) => v,
                    None => words.next().cloned().ok_or_else(|| usage_error("--json needs a JSON object".into()))?,
                };
                match serde_json::from_str::<Value>(&text) {
                    Ok(Value::Object(obj)) => from_json.extend(obj),
                    Ok(_) => return Err(usage_error("--json takes a JSON object ({\"name\": value, ...})".into())),
                    Err(e) => return Err(usage_error(format!("--json: not JSON: {e}"))),
                }
                continue;
            }
            let Some(param) = self.param(flag) else {
                let names: Vec<String> = self.params.iter().map(|p| p.name.clone()).chain(["json".into()]).collect();
                let hint = match clix_common::names::did_you_mean(flag, names.iter().map(String::as_str)) {
                    Some(near) => format!("did you mean --{near}?"),
                    None => format!("its flags: {}", self.flags().join(", ")),
                };
                return Err(usage_error(format!("unknown flag --{flag}; {hint}")));
            };
            let text = match (&param.kind, inline) {
                (_, Some(v)) => v,
                (Kind::Boolean, None) => "true".into(),
                (_, None) => words
                    .next()
                    .cloned()
                    .ok_or_else(|| usage_error(format!("--{} needs a value ({})", param.name, param.kind.name())))?,
            };
            let value = match &param.kind {
                Kind::Array(item) => {
                    let one = value_of(item, &text).map_err(|e| usage_error(format!("--{}: {e}", param.name)))?;
                    match args.entry(param.name.clone()).or_insert_with(|| Value::Array(Vec::new())) {
                        Value::Array(items) => items.push(one),
                        other => *other = Value::Array(vec![one]),
                    }
                    continue;
                }
                kind => value_of(kind, &text).map_err(|e| usage_error(format!("--{}: {e}", param.name)))?,
            };
            args.insert(param.name.clone(), value);
        }
        from_json.extend(args);
        let missing: Vec<String> = self
            .params
            .iter()
            .filter(|p| p.required && !from_json.contains_key(&p.name))
            .map(|p| format!("--{}", p.name))
            .collect();
        if !missing.is_empty() {
            return Err(usage_error(format!("missing {} (required)", missing.join(", "))));
        }
        Ok(Some(from_json))
    }

    /// The parameter `flag` names (`some-name` finds `some_name`).
    fn param(&self, flag: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == flag || p.name.replace('_', "-") == flag)
    }

    fn flags(&self) -> Vec<String> {
        self.params.iter().map(|p| format!("--{}", p.name)).chain(["--json".into()]).collect()
    }
}

/// `text` as a value of `kind`, or why it is not one.
fn value_of(kind: &Kind, text: &str) -> Result<Value, String> {
    match kind {
        Kind::String => Ok(Value::String(text.into())),
        Kind::Integer => text
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| format!("`{text}` is not a whole number (an integer is expected)")),
        Kind::Number => text
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| format!("`{text}` is not a number")),
        Kind::Boolean => match text {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(format!("`{text}` is not true or false (write --flag or --flag=false)")),
        },
        Kind::Enum(values) => values.iter().find(|v| shown(v) == text).cloned().ok_or_else(|| {
            format!("`{text}` is not allowed; allowed: {}", values.iter().map(shown).collect::<Vec<_>>().join(", "))
        }),
        // A list given whole, as JSON, where a flag of its own would not do.
        Kind::Array(_) | Kind::Json => serde_json::from_str(text).map_err(|e| format!("not JSON: {e}")),
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
            "paint --color red|green|blue [--ids INT...] [--loud] [--note TEXT] [--options JSON] [--owner_name TEXT] \
             [--ratio NUMBER] [--tags TEXT...] [--times INT]"
        );
    }

    #[test]
    fn each_type_reads_its_flag() {
        let rows: &[(&str, Value)] = &[
            ("--color red", json!({"color": "red"})),
            ("--color=blue --note hi", json!({"color": "blue", "note": "hi"})),
            ("--color red --times 3 --ratio 2.5", json!({"color": "red", "times": 3, "ratio": 2.5})),
            ("--color red --ratio 2", json!({"color": "red", "ratio": 2.0})),
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
            ("--color purple", "--color: `purple` is not allowed; allowed: red, green, blue"),
            ("--times 3", "missing --color (required)"),
            ("--color red --times x", "--times: `x` is not a whole number"),
            ("--color red --times 1.5", "--times: `1.5` is not a whole number"),
            ("--color red --ratio fast", "--ratio: `fast` is not a number"),
            ("--color red --loud=maybe", "--loud: `maybe` is not true or false"),
            ("--color red --ids one", "--ids: `one` is not a whole number"),
            ("--color red --tims 2", "unknown flag --tims; did you mean --times?"),
            ("--color red --zzz 2", "unknown flag --zzz; its flags: --color, --ids"),
            ("--color red extra", "unexpected `extra`: every parameter is a flag"),
            ("--color", "--color needs a value"),
            ("--json [1]", "--json takes a JSON object"),
            ("--json {", "--json: not JSON"),
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
        assert!(t.usage("fx").starts_with("usage: fx paint --color red|green|blue [--ids INT...] [--loud]"));
        let help = t.help("fx");
        for want in [
            "fx paint: Paints.\nMore words.",
            "--color (required; one of red, green, blue)",
            "--times (integer; default 1): How often.",
            "--tags (list of text, one flag each)",
            "--note (text)\n",
            "--options (JSON)",
            "--json JSON:",
        ] {
            assert!(help.contains(want), "{want:?} in {help}");
        }
    }
}
