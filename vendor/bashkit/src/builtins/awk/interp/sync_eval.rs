//! clix patch (docs/bashkit-patches.md, "awk expressions without a future
//! per node"): most expressions in a hot awk loop (`s += $1`, `i < n`,
//! `a[i] = i`, `n++`) never wait for anything. The async evaluator boxes a
//! future for every node (to bound its stack frames), which made
//! allocation and the boxes a third of such a loop. An expression with no
//! function call and no `getline` is evaluated here, with plain recursion;
//! its semantics are `eval_boxed`'s, through the same helpers.

use super::super::ast::Expr;
use super::super::value::Value;
use super::{Interp, Loc, R, bool_val};
use crate::builtins::awk::regex::AwkRegex;
use std::sync::Arc;

/// Deepest expression evaluated here; deeper ones take the async path,
/// whose boxed frames keep the stack bounded.
const MAX_DEPTH: usize = 64;

/// Whether `e` can be evaluated without awaiting: no call (user or
/// builtin), no `getline`, and not nested deeper than [`MAX_DEPTH`].
pub(super) fn is_sync(e: &Expr) -> bool {
    sync_within(e, MAX_DEPTH)
}

fn sync_within(e: &Expr, depth: usize) -> bool {
    let Some(depth) = depth.checked_sub(1) else { return false };
    let all = |es: &[Expr]| es.iter().all(|e| sync_within(e, depth));
    match e {
        Expr::Num(_) | Expr::Str(_) | Expr::Regex(_) | Expr::Var(_) => true,
        Expr::Elem(_, groups) => groups.iter().all(|g| all(g)),
        Expr::Field(x) | Expr::Group(x) | Expr::Neg(x) | Expr::Plus(x) | Expr::Not(x) => sync_within(x, depth),
        Expr::Assign(a, _, b)
        | Expr::Binary(_, a, b)
        | Expr::Cmp(_, a, b)
        | Expr::Match(_, a, b)
        | Expr::And(a, b)
        | Expr::Or(a, b)
        | Expr::Concat(a, b) => sync_within(a, depth) && sync_within(b, depth),
        Expr::Cond(c, a, b) => sync_within(c, depth) && sync_within(a, depth) && sync_within(b, depth),
        Expr::In(subs, arr) => all(subs) && sync_within(arr, depth),
        Expr::IncDec(x, _, _) => sync_within(x, depth),
        Expr::List(items) => all(items),
        Expr::Call(..) | Expr::Indirect(..) | Expr::Builtin(..) | Expr::Getline(..) => false,
    }
}

impl Interp {
    /// `eval` of an expression [`is_sync`] accepted.
    pub(super) fn eval_sync(&mut self, e: &Expr) -> R<Value> {
        match e {
            Expr::Num(n) => Ok(Value::Num(*n)),
            Expr::Str(s) => Ok(Value::Str(s.clone())),
            Expr::Var(v) => self.get_var(*v),
            Expr::Regex(id) => {
                let re = self.lit_regex(*id);
                self.rebuild_record()?;
                Ok(bool_val(re.is_match(&self.record)))
            }
            Expr::Elem(..) => {
                let loc = self.resolve_sync(e)?;
                self.load(&loc)
            }
            Expr::Field(i) => {
                let n = self.eval_sync(i)?.to_num();
                let idx = self.field_index(n)?;
                self.get_field(idx)
            }
            Expr::Group(inner) => self.eval_sync(inner),
            Expr::Assign(lv, op, rhs) => {
                let loc = self.resolve_sync(lv)?;
                let r = self.eval_sync(rhs)?;
                self.assign_at(loc, *op, r)
            }
            Expr::Neg(x) => Ok(Value::Num(-self.eval_sync(x)?.to_num())),
            Expr::Plus(x) => Ok(Value::Num(self.eval_sync(x)?.to_num())),
            Expr::Not(x) => Ok(bool_val(!self.eval_sync(x)?.to_bool())),
            Expr::Binary(op, a, b) => {
                let x = self.eval_sync(a)?.to_num();
                let y = self.eval_sync(b)?.to_num();
                Ok(Value::Num(self.arith(*op, x, y)?))
            }
            Expr::Cmp(op, a, b) => {
                let x = self.eval_sync(a)?;
                let y = self.eval_sync(b)?;
                Ok(self.compare_values(*op, &x, &y))
            }
            Expr::Match(neg, a, b) => {
                let s = self.eval_sync(a)?;
                let s = self.to_str(&s);
                let re = self.regex_operand_sync(b)?;
                Ok(bool_val(re.is_match(&s) != *neg))
            }
            Expr::And(a, b) => Ok(bool_val(self.eval_sync(a)?.to_bool() && self.eval_sync(b)?.to_bool())),
            Expr::Or(a, b) => Ok(bool_val(self.eval_sync(a)?.to_bool() || self.eval_sync(b)?.to_bool())),
            Expr::Cond(c, a, b) => {
                if self.eval_sync(c)?.to_bool() {
                    self.eval_sync(a)
                } else {
                    self.eval_sync(b)
                }
            }
            Expr::Concat(a, b) => {
                let x = self.eval_sync(a)?;
                let s = self.to_str(&x);
                let y = self.eval_sync(b)?;
                self.concat(s, &y)
            }
            Expr::In(subs, arr) => {
                let key = self.subscript_sync(subs)?;
                let id = self.array_of_expr_sync(arr)?;
                Ok(bool_val(self.array(id).is_some_and(|a| a.contains(&key))))
            }
            Expr::IncDec(lv, delta, prefix) => {
                let loc = self.resolve_sync(lv)?;
                self.step_at(loc, *delta, *prefix)
            }
            Expr::List(items) => Ok(Value::Str(self.subscript_sync(items)?)),
            // `is_sync` never accepts these; the async path reports them the same way.
            Expr::Call(..) | Expr::Indirect(..) | Expr::Builtin(..) | Expr::Getline(..) => Err(self.fatal_at(
                "internal error: a call reached the synchronous evaluator",
            )),
        }
    }

    /// `resolve` of an lvalue whose parts are synchronous.
    fn resolve_sync(&mut self, lv: &Expr) -> R<Loc> {
        match lv {
            Expr::Var(v) => Ok(Loc::Var(*v)),
            Expr::Elem(v, groups) => {
                let mut id = self.array_of_var(*v)?;
                let (last, path) = groups.split_last().ok_or(super::Unwind::Fatal)?;
                for g in path {
                    let k = self.subscript_sync(g)?;
                    id = self.subarray(id, k)?;
                }
                let key = self.subscript_sync(last)?;
                Ok(Loc::Elem(id, key))
            }
            Expr::Field(e) => {
                let i = self.eval_sync(e)?.to_num();
                Ok(Loc::Field(self.field_index(i)?))
            }
            Expr::Group(inner) => self.resolve_sync(inner),
            _ => Err(self.fatal_at("assignment to a non-lvalue")),
        }
    }

    /// `subscript` of synchronous parts.
    fn subscript_sync(&mut self, g: &[Expr]) -> R<String> {
        if let [only] = g {
            let v = self.eval_sync(only)?;
            return Ok(self.to_str(&v));
        }
        let mut key = String::new();
        for (i, e) in g.iter().enumerate() {
            let v = self.eval_sync(e)?;
            self.push_key_part(&mut key, i, &v)?;
        }
        Ok(key)
    }

    /// `array_of_expr` with synchronous subscripts.
    fn array_of_expr_sync(&mut self, e: &Expr) -> R<super::ArrId> {
        match e {
            Expr::Var(v) => self.array_of_var(*v),
            Expr::Elem(v, groups) => {
                let mut id = self.array_of_var(*v)?;
                for g in groups {
                    let key = self.subscript_sync(g)?;
                    id = self.subarray(id, key)?;
                }
                Ok(id)
            }
            Expr::Group(inner) => self.array_of_expr_sync(inner),
            _ => Err(self.fatal_at("attempt to use a scalar value as array")),
        }
    }

    /// `regex_operand` of a synchronous operand.
    fn regex_operand_sync(&mut self, e: &Expr) -> R<Arc<AwkRegex>> {
        match e {
            Expr::Regex(id) => Ok(self.lit_regex(*id)),
            Expr::Group(inner) if matches!(**inner, Expr::Regex(_)) => self.regex_operand_sync(inner),
            other => {
                let v = self.eval_sync(other)?;
                let s = self.to_str(&v);
                self.dyn_regex(&s)
            }
        }
    }
}
