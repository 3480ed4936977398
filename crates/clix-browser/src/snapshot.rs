//! The accessibility tree as indented text a model can act on: every
//! element it can click or fill carries a ref (`- button "Submit" [ref=e2]`).
//! Pure: Chromium's `Accessibility.getFullAXTree` nodes in, lines out.

use std::collections::HashMap;

use serde_json::Value;

/// Roles the agent can act on: they get a ref.
const INTERACTIVE: &[&str] = &[
    "button",
    "link",
    "textbox",
    "searchbox",
    "checkbox",
    "radio",
    "combobox",
    "listbox",
    "option",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "tab",
    "switch",
    "slider",
    "spinbutton",
    "treeitem",
];

/// Roles that only group others; compact mode shows their children in their place.
const STRUCTURAL: &[&str] = &[
    "generic",
    "none",
    "presentation",
    "group",
    "section",
    "Section",
    "div",
    "paragraph",
    "LayoutTable",
    "LayoutTableRow",
    "LayoutTableCell",
    "ListMarker",
    "rowgroup",
];

/// Never shown: the pieces of a text run, breaks.
const HIDDEN: &[&str] = &["InlineTextBox", "LineBreak"];

/// Longest name shown; the rest is cut with `…` (get text reads it whole).
const NAME_CHARS: usize = 160;

/// What a snapshot shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SnapshotOptions {
    /// Only elements the agent can act on (`-i`).
    pub interactive: bool,
    /// Leave out unnamed structural nodes and text a parent already names (`-c`).
    pub compact: bool,
    /// Levels of the tree shown (`-d N`).
    pub depth: Option<usize>,
}

/// One node of Chromium's tree, the parts a snapshot uses.
#[derive(Debug, Clone, Default)]
struct AxNode {
    role: String,
    name: String,
    value: Option<String>,
    states: Vec<String>,
    children: Vec<String>,
    backend: Option<i64>,
    ignored: bool,
}

/// The rendered lines, and which DOM node each ref stands for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rendered {
    /// The text lines, without trailing newlines.
    pub lines: Vec<String>,
    /// Refs in the order they appear, with the DOM node (`backendDOMNodeId`).
    pub refs: Vec<(String, i64)>,
}

/// Renders `nodes` from the node holding DOM node `root` (or the document)
/// down; `ref_for` names the ref of an interactive DOM node (stable while
/// the page lives).
pub fn render(
    nodes: &[Value],
    options: SnapshotOptions,
    root: Option<i64>,
    ref_for: &mut dyn FnMut(i64) -> String,
) -> Rendered {
    let page = Document { nodes, owner: None, label: String::new() };
    render_documents(&[page], options, root, &mut |_, backend| ref_for(backend))
}

/// One document of a page: the page's own (the first), or a frame's,
/// shown under its `<iframe>` element in another.
#[derive(Debug, Clone)]
pub(crate) struct Document<'a> {
    /// Its accessibility tree, as `Accessibility.getFullAXTree` sends it.
    pub(crate) nodes: &'a [Value],
    /// The document its `<iframe>` is in (an index into the list) and that
    /// element's DOM node there; `None` for the page.
    pub(crate) owner: Option<(usize, i64)>,
    /// The line shown in the element's place: `iframe "Title" (URL)`.
    pub(crate) label: String,
}

/// Renders the page's document (the first of `documents`) as [`render`]
/// does, each frame's document indented under its frame's line, which
/// stands in the place of its `<iframe>` even with `-i`; `ref_for` gets the
/// document's index and the DOM node. `root` is a DOM node of the page's.
pub(crate) fn render_documents(
    documents: &[Document],
    options: SnapshotOptions,
    root: Option<i64>,
    ref_for: &mut dyn FnMut(usize, i64) -> String,
) -> Rendered {
    let parsed: Vec<Vec<(String, AxNode)>> =
        documents.iter().map(|d| d.nodes.iter().filter_map(parse).collect()).collect();
    let Some(page) = parsed.first() else { return Rendered::default() };
    let Some(first) = page.first().map(|(id, _)| id.as_str()) else { return Rendered::default() };
    let start = match root {
        Some(backend) => match page.iter().find(|(_, n)| n.backend == Some(backend)) {
            Some((id, _)) => id.as_str(),
            None => return Rendered::default(),
        },
        None => first,
    };
    let by_id: Vec<HashMap<&str, &AxNode>> =
        parsed.iter().map(|nodes| nodes.iter().map(|(id, n)| (id.as_str(), n)).collect()).collect();
    // (document, element) → the frame document shown in its place.
    let framed: HashMap<(usize, i64), usize> =
        documents.iter().enumerate().filter_map(|(i, d)| d.owner.map(|owner| (owner, i))).collect();
    let mut out = Rendered::default();
    // Explicit stack: a hostile page can nest elements deeper than any call stack.
    let mut stack = vec![Visit { document: 0, id: start, depth: 0, level: 0, parent_name: String::new() }];
    while let Some(Visit { document, id, depth, level, parent_name }) = stack.pop() {
        let Some(node) = by_id[document].get(id) else { continue };
        let indent = if options.interactive { level } else { depth };
        let fits = options.depth.is_none_or(|max| depth < max);
        if let Some(&inner) = node.backend.and_then(|b| framed.get(&(document, b))) {
            if fits {
                out.lines.push(format!("{}- {}", "  ".repeat(indent), documents[inner].label));
                if let Some((id, _)) = parsed[inner].first() {
                    let parent_name = String::new();
                    stack.push(Visit { document: inner, id, depth: depth + 1, level: level + 1, parent_name });
                }
            }
            continue;
        }
        let shown = shows(node, options, &parent_name);
        let child_depth = if shown { depth + 1 } else { depth };
        if shown && fits {
            let reference = node.backend.filter(|_| is_interactive(&node.role)).map(|b| {
                let r = ref_for(document, b);
                out.refs.push((r.clone(), b));
                r
            });
            out.lines.push(format!("{}{}", "  ".repeat(indent), line(node, reference.as_deref())));
        }
        if options.depth.is_some_and(|max| child_depth > max) {
            continue;
        }
        let name = if shown { node.name.clone() } else { parent_name };
        for child in node.children.iter().rev() {
            stack.push(Visit { document, id: child.as_str(), depth: child_depth, level, parent_name: name.clone() });
        }
    }
    out
}

/// A node still to render: its document, id, shown depth, frame nesting
/// level, and the name of its nearest shown ancestor.
struct Visit<'a> {
    document: usize,
    id: &'a str,
    depth: usize,
    level: usize,
    parent_name: String,
}

fn is_interactive(role: &str) -> bool {
    INTERACTIVE.contains(&role)
}

/// Whether `node` gets a line of its own (its children are walked either way).
fn shows(node: &AxNode, options: SnapshotOptions, parent_name: &str) -> bool {
    if node.ignored || HIDDEN.contains(&node.role.as_str()) || node.role == "RootWebArea" {
        return false;
    }
    if options.interactive {
        return is_interactive(&node.role);
    }
    if node.role == "StaticText" {
        let text = node.name.trim();
        return !(text.is_empty() || options.compact && parent_name.trim() == text);
    }
    !(options.compact && STRUCTURAL.contains(&node.role.as_str()) && node.name.trim().is_empty())
}

fn line(node: &AxNode, reference: Option<&str>) -> String {
    let mut s = if node.role == "StaticText" {
        format!("- text: {}", cut(node.name.trim()))
    } else if node.name.trim().is_empty() {
        format!("- {}", node.role)
    } else {
        format!("- {} \"{}\"", node.role, cut(node.name.trim()))
    };
    if let Some(r) = reference {
        s.push_str(&format!(" [ref={r}]"));
    }
    for state in &node.states {
        s.push_str(&format!(" [{state}]"));
    }
    if let Some(value) = node.value.as_deref().filter(|v| !v.is_empty() && *v != node.name) {
        s.push_str(&format!(": {}", cut(value)));
    }
    s
}

fn cut(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(NAME_CHARS) {
        Some((at, _)) => format!("{}…", &flat[..at]),
        None => flat,
    }
}

/// The parts of one CDP `AXNode` a snapshot uses, keyed by its `nodeId`.
fn parse(node: &Value) -> Option<(String, AxNode)> {
    let id = node.get("nodeId")?.as_str()?.to_string();
    let text = |v: Option<&Value>| {
        v.and_then(|v| v.get("value")).map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    };
    let mut states = Vec::new();
    for property in node.get("properties").and_then(Value::as_array).into_iter().flatten() {
        let name = property.get("name").and_then(Value::as_str).unwrap_or_default();
        let value = property.get("value").and_then(|v| v.get("value"));
        match (name, value) {
            ("checked" | "pressed", Some(Value::String(v))) if v == "true" => states.push(name.to_string()),
            ("checked" | "pressed", Some(Value::String(v))) if v == "mixed" => states.push(format!("{name}=mixed")),
            ("checked" | "pressed", Some(Value::Bool(true))) => states.push(name.to_string()),
            ("selected" | "expanded" | "disabled" | "required" | "readonly", Some(Value::Bool(true))) => {
                states.push(name.to_string())
            }
            ("level", Some(Value::Number(n))) => states.push(format!("level={n}")),
            _ => {}
        }
    }
    let children = node
        .get("childIds")
        .and_then(Value::as_array)
        .map(|ids| ids.iter().filter_map(Value::as_str).map(String::from).collect())
        .unwrap_or_default();
    Some((
        id,
        AxNode {
            role: text(node.get("role")).unwrap_or_default(),
            name: text(node.get("name")).unwrap_or_default(),
            value: text(node.get("value")),
            states,
            children,
            backend: node.get("backendDOMNodeId").and_then(Value::as_i64),
            ignored: node.get("ignored").and_then(Value::as_bool).unwrap_or(false),
        },
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn node(id: &str, role: &str, name: &str, children: &[&str], backend: i64) -> Value {
        json!({"nodeId": id, "role": {"value": role}, "name": {"value": name}, "childIds": children,
               "backendDOMNodeId": backend, "ignored": false})
    }

    fn page() -> Vec<Value> {
        let mut checkbox = node("6", "checkbox", "Subscribe", &[], 16);
        checkbox["properties"] = json!([{"name": "checked", "value": {"type": "tristate", "value": "true"}}]);
        let mut heading = node("2", "heading", "Sign up", &["7"], 12);
        heading["properties"] = json!([{"name": "level", "value": {"type": "integer", "value": 1}}]);
        let mut field = node("4", "textbox", "Name", &[], 14);
        field["value"] = json!({"type": "string", "value": "Ada"});
        vec![
            node("1", "RootWebArea", "Form", &["2", "3"], 11),
            heading,
            node("3", "generic", "", &["4", "5", "6", "8"], 13),
            field,
            node("5", "button", "Send", &["9"], 15),
            checkbox,
            node("7", "StaticText", "Sign up", &[], 17),
            node("8", "StaticText", "Fill in   every field", &[], 18),
            node("9", "StaticText", "Send", &[], 19),
        ]
    }

    fn refs() -> impl FnMut(i64) -> String {
        |backend| format!("e{}", backend - 10)
    }

    #[test]
    fn compact_shows_named_elements_and_text_with_refs() {
        let options = SnapshotOptions { compact: true, ..SnapshotOptions::default() };
        let out = render(&page(), options, None, &mut refs());
        assert_eq!(
            out.lines,
            [
                "- heading \"Sign up\" [level=1]",
                "- textbox \"Name\" [ref=e4]: Ada",
                "- button \"Send\" [ref=e5]",
                "- checkbox \"Subscribe\" [ref=e6] [checked]",
                "- text: Fill in every field",
            ]
        );
        assert_eq!(out.refs, [("e4".to_string(), 14), ("e5".into(), 15), ("e6".into(), 16)]);
    }

    #[test]
    fn interactive_only_and_full_trees() {
        let interactive = SnapshotOptions { interactive: true, ..SnapshotOptions::default() };
        let out = render(&page(), interactive, None, &mut refs());
        assert_eq!(out.lines.len(), 3, "{:?}", out.lines);
        assert!(out.lines.iter().all(|l| l.contains("[ref=")));
        let full = render(&page(), SnapshotOptions::default(), None, &mut refs());
        assert!(full.lines.contains(&"- generic".to_string()), "{:?}", full.lines);
        assert!(full.lines.contains(&"    - text: Send".to_string()), "{:?}", full.lines);
    }

    #[test]
    fn depth_and_scope_limit_what_is_shown() {
        let shallow = SnapshotOptions { depth: Some(1), ..SnapshotOptions::default() };
        let out = render(&page(), shallow, None, &mut refs());
        assert_eq!(out.lines, ["- heading \"Sign up\" [level=1]", "- generic"]);
        let scoped = render(&page(), SnapshotOptions::default(), Some(15), &mut refs());
        assert_eq!(scoped.lines, ["- button \"Send\" [ref=e5]", "  - text: Send"]);
        assert!(render(&page(), SnapshotOptions::default(), Some(999), &mut refs()).lines.is_empty());
    }

    #[test]
    fn deep_nesting_and_garbage_do_not_break_it() {
        let mut nodes = Vec::new();
        for i in 0..100_000 {
            nodes.push(node(&i.to_string(), "generic", "", &[&(i + 1).to_string()], i));
        }
        let out = render(&nodes, SnapshotOptions { compact: true, ..Default::default() }, None, &mut refs());
        assert!(out.lines.is_empty());
        assert_eq!(
            render(&[json!(1), json!({"x": 2})], SnapshotOptions::default(), None, &mut refs()),
            Rendered::default()
        );
    }

    #[test]
    fn a_frame_is_shown_under_its_element_with_its_own_refs() {
        let outer = vec![
            node("1", "RootWebArea", "Shop", &["2", "3"], 11),
            node("2", "button", "Top", &[], 12),
            node("3", "Iframe", "Pay", &[], 13),
        ];
        let inner = vec![node("1", "RootWebArea", "Payment", &["2"], 11), node("2", "button", "Pay now", &[], 12)];
        let documents = [
            Document { nodes: &outer, owner: None, label: String::new() },
            Document { nodes: &inner, owner: Some((0, 13)), label: "iframe \"Pay\" (http://pay.test/)".into() },
        ];
        let mut named = |document: usize, backend: i64| format!("e{document}-{backend}");
        let out = render_documents(&documents, SnapshotOptions::default(), None, &mut named);
        assert_eq!(
            out.lines,
            [
                "- button \"Top\" [ref=e0-12]",
                "- iframe \"Pay\" (http://pay.test/)",
                "  - button \"Pay now\" [ref=e1-12]"
            ]
        );
        let interactive = SnapshotOptions { interactive: true, ..SnapshotOptions::default() };
        let out = render_documents(&documents, interactive, None, &mut named);
        assert_eq!(out.lines[1..], ["- iframe \"Pay\" (http://pay.test/)", "  - button \"Pay now\" [ref=e1-12]"]);
        let shallow = SnapshotOptions { depth: Some(1), ..SnapshotOptions::default() };
        assert_eq!(render_documents(&documents, shallow, None, &mut named).lines.len(), 2);
    }

    #[test]
    fn long_names_are_cut() {
        let long = "word ".repeat(100);
        let out = render(&[node("1", "link", &long, &[], 3)], SnapshotOptions::default(), None, &mut refs());
        assert!(out.lines[0].ends_with("…\" [ref=e-7]"), "{}", out.lines[0]);
    }
}
