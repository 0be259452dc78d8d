// The four types reader::fast fills, as src/reader/event.rs defines them (fields only).
use std::borrow::Cow;
#[derive(Debug, Default, PartialEq)]
pub struct RawStr<'a>(pub Cow<'a, [u8]>);
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawText<'a>(pub &'a str);
#[derive(Debug, Default, PartialEq)]
pub struct RawArgs<'a> {
    pub external_id: Option<RawText<'a>>,
    pub correlation: Option<RawText<'a>>,
    pub stream: Option<RawText<'a>>,
    pub device: Option<RawText<'a>>,
    pub grid: Option<RawText<'a>>,
    pub block: Option<RawText<'a>>,
    pub input_dims: Option<RawText<'a>>,
    pub input_type: Option<RawText<'a>>,
}
#[derive(Debug, Default, PartialEq)]
pub struct RawEvent<'a> {
    pub ph: Option<RawStr<'a>>,
    pub cat: Option<RawStr<'a>>,
    pub name: Option<RawStr<'a>>,
    pub pid: Option<RawText<'a>>,
    pub tid: Option<RawText<'a>>,
    pub ts: Option<RawText<'a>>,
    pub dur: Option<RawText<'a>>,
    pub args: Option<RawArgs<'a>>,
}
