"""The M3 chat format in Python: a line-for-line mirror of the server's built-in template
(src/tokenizer/builtin-m3-template.ts) and tool-call formatter, so that the generated training
text is what the server renders. src/datagen/python-render.test.ts checks it against the TS
renderer on training/fixtures/render-cases.json."""
import json

BOS, TURN, EOT = "]~!b[", "]~b]", "[e~["
THINK_OPEN, THINK_CLOSE, NS = "<mm:think>", "</mm:think>", "]<]minimax[>["
SYSTEM = "You are a helpful assistant."

TOOLS_HEADER = (
    "# Tools\nYou can call the tools listed below; each is given with the JSON Schema of its parameters.\n<tools>\n"
)
TOOLS_FOOTER = (
    f"</tools>\n\nTo call tools, write one {NS}<tool_call> block holding one {NS}<invoke> element per call. "
    "Each argument is an element named after its parameter; objects nest as elements and each list entry is an "
    f"{NS}<item> element. Example:\n{NS}<tool_call>\n{NS}<invoke name=\"get_weather\">{NS}<city>Paris{NS}</city>"
    f"{NS}<days>{NS}<item>1{NS}</item>{NS}<item>2{NS}</item>{NS}</days>{NS}</invoke>\n{NS}</tool_call>"
)


def tojson(v):
    """Jinja `tojson` as @huggingface/jinja writes it: ", " and ": " separators, no ASCII escaping."""
    return json.dumps(v, ensure_ascii=False)


def scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))  # a JS number prints 12.0 as 12
    return str(v)


def to_xml(v):
    if v is None:
        return ""
    if isinstance(v, dict):
        return "".join(f"{NS}<{k}>{to_xml(x)}{NS}</{k}>" for k, x in v.items() if x is not None)
    if isinstance(v, list):
        return "".join(f"{NS}<item>{to_xml(x)}{NS}</item>" for x in v)
    return scalar(v)


def tool_calls(calls):
    """calls: [(name, {args})] as the M3 block."""
    inv = "".join(f'{NS}<invoke name="{n}">{to_xml(a)}{NS}</invoke>\n' for n, a in calls)
    return f"{NS}<tool_call>\n{inv}{NS}</tool_call>"


def render_prompt(messages, tools=None):
    """messages: OpenAI-style dicts; assistant tool calls as {"tool_calls": [(name, args)]}."""
    out = [f"{BOS}{TURN}system\n{SYSTEM}{EOT}\n"]
    dev = "\n\n".join(m["content"] for m in messages if m["role"] in ("system", "developer") and m["content"])
    if dev or tools:
        body = dev
        if tools:
            body += ("\n\n" if dev else "") + TOOLS_HEADER
            body += "".join(f"<tool>{tojson(t['function'])}</tool>\n" for t in tools) + TOOLS_FOOTER
        out.append(f"{TURN}developer\n{body}{EOT}\n")
    for i, m in enumerate(messages):
        r = m["role"]
        if r == "user":
            out.append(f"{TURN}user\n{m['content']}{EOT}\n")
        elif r == "assistant":
            calls = tool_calls(m["tool_calls"]) if m.get("tool_calls") else ""
            out.append(f"{TURN}ai\n{THINK_CLOSE}{m.get('content') or ''}{calls}{EOT}\n")
        elif r == "tool":
            first = i == 0 or messages[i - 1]["role"] != "tool"
            last = i == len(messages) - 1 or messages[i + 1]["role"] != "tool"
            out.append((f"{TURN}tool\n" if first else "") + f"<response>{m['content']}</response>")
            out.append(f"{EOT}\n" if last else "\n")
    out.append(f"{TURN}ai\n")
    return "".join(out)


def render_completion(reasoning, content, calls=None):
    return f"{THINK_OPEN}{reasoning}{THINK_CLOSE}{content}{tool_calls(calls) if calls else ''}{EOT}"


def compact(v):
    """A tool result as the eval client sends it (JSON.stringify)."""
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))
