//! The opcodes of the pickle machine: each one builds inert nodes, nothing is imported
//! or called.

use super::fault::Fault;
use super::machine::{Machine, R};
use super::node::Node;

/// The opcodes `torch.load(weights_only=True)` runs (`torch/_weights_only_unpickler.py`,
/// torch 2.15): the protocol-2 subset `torch.save` writes. A pickle using any other
/// (`FRAME`, `STACK_GLOBAL`, `MEMOIZE` of protocol 4, `BINBYTES`, `DICT`, ...) is refused
/// with "Unsupported operand".
const WEIGHTS_ONLY: &[u8] = &[
    b'c', 0x81, b'R', b'b', b'a', b'e', b's', b'u', b'(', b't', 0x85, 0x86, 0x87, b'N', 0x88, 0x89,
    b')', b']', b'}', 0x8f, b'J', b'K', b'M', b'G', b'X', b'U', b'Q', b'h', b'j', b'q', b'r', 0x8a,
    0x80, b'.',
];

/// The name of a pickle opcode, for messages.
pub fn opcode_name(op: u8) -> &'static str {
    match op {
        0x95 => "FRAME",
        0x93 => "STACK_GLOBAL",
        0x94 => "MEMOIZE",
        0x8c => "SHORT_BINUNICODE",
        0x8d => "BINUNICODE8",
        0x8e => "BINBYTES8",
        0x96 => "BYTEARRAY8",
        0x90 => "ADDITEMS",
        0x91 => "FROZENSET",
        0x92 => "NEWOBJ_EX",
        0x8b => "LONG4",
        b'B' => "BINBYTES",
        b'C' => "SHORT_BINBYTES",
        b'T' => "BINSTRING",
        b'S' => "STRING",
        b'V' => "UNICODE",
        b'I' => "INT",
        b'L' => "LONG",
        b'F' => "FLOAT",
        b'd' => "DICT",
        b'l' => "LIST",
        b'i' => "INST",
        b'o' => "OBJ",
        b'p' => "PUT",
        b'g' => "GET",
        b'P' => "PERSID",
        b'0' => "POP",
        b'1' => "POP_MARK",
        b'2' => "DUP",
        _ => "an opcode",
    }
}

impl Machine<'_> {
    /// Runs one opcode; `false` after `STOP`.
    pub(super) fn step(&mut self) -> R<bool> {
        let at = self.pos;
        let op = self.u8()?;
        if self.weights_only_refuses.is_none() && !WEIGHTS_ONLY.contains(&op) {
            self.weights_only_refuses = Some((at, op));
        }
        match op {
            0x80 => {
                let proto = self.u8()?;
                if proto > 5 {
                    return Err(Fault::Protocol(proto));
                }
                self.proto = proto;
            }
            0x95 => {
                self.take(8)?;
            }
            b'.' => return Ok(false),
            b'(' => self.marks.push(self.stack.len()),
            b'0' => {
                self.pop()?;
            }
            b'1' => {
                self.pop_mark()?;
            }
            b'2' => {
                let top = self.top()?;
                self.stack.push(top);
            }
            b'N' => self.push_node(Node::None),
            0x88 => self.push_node(Node::Bool(true)),
            0x89 => self.push_node(Node::Bool(false)),
            b'J' => {
                let v = self.uint(4)? as u32 as i32;
                self.push_node(Node::Int(i64::from(v)));
            }
            b'K' => {
                let v = self.uint(1)?;
                self.push_node(Node::Int(v as i64));
            }
            b'M' => {
                let v = self.uint(2)?;
                self.push_node(Node::Int(v as i64));
            }
            0x8a => {
                let n = self.uint(1)?;
                self.long(n)?;
            }
            0x8b => {
                let n = self.uint(4)?;
                self.long(n)?;
            }
            b'I' | b'L' => {
                let line = self.line()?.trim_end_matches('L');
                let node = match line {
                    "01" => Node::Bool(true),
                    "00" => Node::Bool(false),
                    _ => line
                        .parse::<i64>()
                        .map_or(Node::BigInt(line.len()), Node::Int),
                };
                self.push_node(node);
            }
            b'G' => {
                let bytes = self.take(8)?;
                let v = f64::from_be_bytes(bytes.try_into().expect("8 bytes"));
                self.push_node(Node::Float(v));
            }
            b'F' => {
                let v = self.line()?.parse::<f64>().unwrap_or(f64::NAN);
                self.push_node(Node::Float(v));
            }
            b'X' => {
                let n = self.uint(4)?;
                self.text(n)?;
            }
            0x8c => {
                let n = self.uint(1)?;
                self.text(n)?;
            }
            0x8d => {
                let n = self.uint(8)?;
                self.text(n)?;
            }
            b'V' => {
                let s = self.line()?.to_string();
                self.push_node(Node::Str(s));
            }
            b'S' => {
                let s = self.line()?.trim_matches(['\'', '"']).to_string();
                self.push_node(Node::Str(s));
            }
            b'T' => {
                let n = self.uint(4)?;
                self.text(n)?;
            }
            b'U' => {
                let n = self.uint(1)?;
                self.text(n)?;
            }
            b'B' => {
                let n = self.uint(4)?;
                self.bytes(n)?;
            }
            b'C' => {
                let n = self.uint(1)?;
                self.bytes(n)?;
            }
            0x8e | 0x96 => {
                let n = self.uint(8)?;
                self.bytes(n)?;
            }
            b')' => self.push_node(Node::Tuple(Vec::new())),
            b't' => {
                let items = self.pop_mark()?;
                self.push_node(Node::Tuple(items));
            }
            0x85..=0x87 => {
                let n = usize::from(op - 0x84);
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.pop()?);
                }
                items.reverse();
                self.push_node(Node::Tuple(items));
            }
            b']' => self.push_node(Node::List(Vec::new())),
            b'l' => {
                let items = self.pop_mark()?;
                self.push_node(Node::List(items));
            }
            b'a' => {
                let item = self.pop()?;
                let target = self.top()?;
                self.append(target, vec![item])?;
            }
            b'e' => {
                let items = self.pop_mark()?;
                let target = self.top()?;
                self.append(target, items)?;
            }
            b'}' => self.push_node(Node::Dict(Vec::new())),
            b'd' => {
                let items = self.pop_mark()?;
                if !items.len().is_multiple_of(2) {
                    return Err(Fault::OddItems("DICT"));
                }
                self.push_node(Node::Dict(
                    items.chunks(2).map(|kv| (kv[0], kv[1])).collect(),
                ));
            }
            b's' => {
                let value = self.pop()?;
                let key = self.pop()?;
                let target = self.top()?;
                self.set_items(target, vec![key, value])?;
            }
            b'u' => {
                let items = self.pop_mark()?;
                let target = self.top()?;
                self.set_items(target, items)?;
            }
            0x8f => self.push_node(Node::Set(Vec::new())),
            0x90 => {
                let items = self.pop_mark()?;
                let target = self.top()?;
                self.append(target, items)?;
            }
            0x91 => {
                let items = self.pop_mark()?;
                self.push_node(Node::Set(items));
            }
            b'c' => {
                let module = self.line()?.to_string();
                let name = self.line()?.to_string();
                self.global(module, name);
            }
            0x93 => {
                let name = self.pop()?;
                let module = self.pop()?;
                let (Node::Str(module), Node::Str(name)) =
                    (self.nodes[module].clone(), self.nodes[name].clone())
                else {
                    return Err(Fault::StackGlobal);
                };
                self.global(module, name);
            }
            b'i' => {
                let module = self.line()?.to_string();
                let name = self.line()?.to_string();
                let items = self.pop_mark()?;
                self.global(module, name);
                let class = self.pop()?;
                let args = self.nodes.len();
                self.nodes.push(Node::Tuple(items));
                self.push_node(Node::Object {
                    class,
                    args,
                    state: None,
                });
            }
            b'o' => {
                let mut items = self.pop_mark()?;
                if items.is_empty() {
                    return Err(Fault::ObjWithoutClass);
                }
                let class = items.remove(0);
                let args = self.nodes.len();
                self.nodes.push(Node::Tuple(items));
                self.push_node(Node::Object {
                    class,
                    args,
                    state: None,
                });
            }
            b'R' => {
                let args = self.pop()?;
                let func = self.pop()?;
                self.push_node(Node::Call(func, args));
            }
            0x81 => {
                let args = self.pop()?;
                let class = self.pop()?;
                self.push_node(Node::Object {
                    class,
                    args,
                    state: None,
                });
            }
            0x92 => {
                let _kwargs = self.pop()?;
                let args = self.pop()?;
                let class = self.pop()?;
                self.push_node(Node::Object {
                    class,
                    args,
                    state: None,
                });
            }
            b'b' => {
                let state = self.pop()?;
                let target = self.top()?;
                match &mut self.nodes[target] {
                    Node::Object { state: slot, .. } if slot.is_none() => *slot = Some(state),
                    Node::Object { .. } | Node::Call(..) => {
                        if matches!(self.nodes[state], Node::Dict(_)) {
                            self.attach_items(target, state)?;
                        }
                    }
                    // BUILD on plain values happens in hand-made pickles; keep the value.
                    _ => {}
                }
            }
            b'p' => {
                let key = self
                    .line()?
                    .parse::<u64>()
                    .map_err(|_| Fault::BadKey("PUT"))?;
                self.memo_put(key)?;
            }
            b'q' => {
                let key = self.uint(1)?;
                self.memo_put(key)?;
            }
            b'r' => {
                let key = self.uint(4)?;
                self.memo_put(key)?;
            }
            0x94 => {
                let key = self.memo.len() as u64;
                self.memo_put(key)?;
            }
            b'g' => {
                let key = self
                    .line()?
                    .parse::<u64>()
                    .map_err(|_| Fault::BadKey("GET"))?;
                self.memo_get(key)?;
            }
            b'h' => {
                let key = self.uint(1)?;
                self.memo_get(key)?;
            }
            b'j' => {
                let key = self.uint(4)?;
                self.memo_get(key)?;
            }
            b'P' => {
                let s = self.line()?.to_string();
                self.push_node(Node::Str(s));
                let id = self.pop()?;
                self.push_node(Node::PersId(id));
            }
            b'Q' => {
                let id = self.pop()?;
                self.push_node(Node::PersId(id));
            }
            other => {
                return Err(Fault::Opcode(other));
            }
        }
        Ok(true)
    }
}
