/**
 * The built-in MiniMax-M3 chat template (Jinja), used when a checkpoint ships none. Written from
 * shared/design/minimax-m3.md §4:
 *
 *   ]~!b[]~b]system\nYou are a helpful assistant.[e~[\n
 *   ]~b]developer\n{system/developer messages}{tools listing}[e~[\n      (when either exists)
 *   ]~b]user\n{content}[e~[\n
 *   ]~b]ai\n</mm:think>{content}{tool-call block}[e~[\n                  (past assistant turns)
 *   ]~b]tool\n<response>{a}</response>\n<response>{b}</response>[e~[\n   (consecutive results)
 *   ]~b]ai\n  (+ <mm:think> when thinking_mode == "enabled")                (generation prompt)
 *
 * A tool-call block is `NS<tool_call>\n` + one `NS<invoke name="f">…NS</invoke>\n` per call +
 * `NS</tool_call>` with NS = `]<]minimax[>[`; arguments are nested elements, list entries
 * `NS<item>` elements, booleans JSON, nulls omitted. `formatToolCalls` in
 * src/server/parsers/tool-call-formatter.ts writes the same text (a test holds them equal).
 * Tool-call arguments must be objects: `renderChat` JSON-parses OpenAI's argument strings.
 */
export const builtinM3Template = [
  "{%- set NS = ']<]minimax[>[' -%}",
  '{%- macro to_xml(v) -%}',
  '{%- if v is mapping -%}',
  '{%- for k, x in v | items -%}{%- if x is not none -%}',
  '{{ NS }}<{{ k }}>{{ to_xml(x) }}{{ NS }}</{{ k }}>',
  '{%- endif -%}{%- endfor -%}',
  '{%- elif v is string -%}{{ v }}',
  '{%- elif v is boolean -%}{{ v | tojson }}',
  '{%- elif v is iterable -%}',
  '{%- for x in v -%}{{ NS }}<item>{{ to_xml(x) }}{{ NS }}</item>{%- endfor -%}',
  '{%- elif v is not none -%}{{ v }}',
  '{%- endif -%}',
  '{%- endmacro -%}',
  '{%- macro tool_calls(calls) -%}',
  '{{ NS }}<tool_call>{{ "\\n" }}',
  '{%- for tc in calls -%}',
  '{%- set fn = tc.function if tc.function is defined else tc -%}',
  '{{ NS }}<invoke name="{{ fn.name }}">',
  '{%- if fn.arguments is mapping -%}{{ to_xml(fn.arguments) }}',
  '{%- elif fn.arguments is string -%}{{ fn.arguments }}{%- endif -%}',
  '{{ NS }}</invoke>{{ "\\n" }}',
  '{%- endfor -%}',
  '{{ NS }}</tool_call>',
  '{%- endmacro -%}',
  '{%- macro text(c) -%}{%- if c is string -%}{{ c }}{%- endif -%}{%- endmacro -%}',
  ']~!b[]~b]system{{ "\\n" }}You are a helpful assistant.[e~[{{ "\\n" }}',
  '{%- set dev = namespace(text="") -%}',
  '{%- for m in messages -%}{%- if m.role == "system" or m.role == "developer" -%}',
  '{%- set dev.text = dev.text + ("\\n\\n" if dev.text else "") + text(m.content) -%}',
  '{%- endif -%}{%- endfor -%}',
  '{%- if dev.text or tools -%}',
  ']~b]developer{{ "\\n" }}{{ dev.text }}',
  '{%- if tools -%}',
  '{{ "\\n\\n" if dev.text else "" }}# Tools{{ "\\n" }}',
  'You can call the tools listed below; each is given with the JSON Schema of its parameters.{{ "\\n" }}',
  '<tools>{{ "\\n" }}',
  '{%- for t in tools -%}<tool>{{ (t.function if t.function is defined else t) | tojson }}</tool>{{ "\\n" }}',
  '{%- endfor -%}',
  '</tools>{{ "\\n" }}{{ "\\n" }}',
  'To call tools, write one {{ NS }}<tool_call> block holding one {{ NS }}<invoke> element per',
  ' call. Each argument is an element named after its parameter; objects nest as elements and',
  ' each list entry is an {{ NS }}<item> element. Example:{{ "\\n" }}',
  '{{ NS }}<tool_call>{{ "\\n" }}',
  '{{ NS }}<invoke name="get_weather">{{ NS }}<city>Paris{{ NS }}</city>',
  '{{ NS }}<days>{{ NS }}<item>1{{ NS }}</item>{{ NS }}<item>2{{ NS }}</item>{{ NS }}</days>',
  '{{ NS }}</invoke>{{ "\\n" }}',
  '{{ NS }}</tool_call>',
  '{%- endif -%}',
  '[e~[{{ "\\n" }}',
  '{%- endif -%}',
  '{%- for m in messages -%}',
  '{%- if m.role == "user" -%}',
  ']~b]user{{ "\\n" }}{{ text(m.content) }}[e~[{{ "\\n" }}',
  '{%- elif m.role == "assistant" -%}',
  ']~b]ai{{ "\\n" }}</mm:think>{{ text(m.content) }}',
  '{%- if m.tool_calls -%}{{ tool_calls(m.tool_calls) }}{%- endif -%}',
  '[e~[{{ "\\n" }}',
  '{%- elif m.role == "tool" -%}',
  '{%- if loop.first or messages[loop.index0 - 1].role != "tool" -%}]~b]tool{{ "\\n" }}{%- endif -%}',
  '<response>{{ text(m.content) }}</response>',
  '{%- if loop.last or messages[loop.index0 + 1].role != "tool" -%}[e~[{{ "\\n" }}{%- else -%}{{ "\\n" }}{%- endif -%}',
  '{%- endif -%}',
  '{%- endfor -%}',
  '{%- if add_generation_prompt -%}',
  ']~b]ai{{ "\\n" }}',
  '{%- if thinking_mode is defined and thinking_mode == "enabled" -%}<mm:think>{%- endif -%}',
  '{%- endif -%}',
].join('');
