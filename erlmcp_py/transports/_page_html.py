"""The hosted elicitation page's HTML: the form dialog, and the short pages around it.

Everything is inline (no external asset): one ``<style>`` and one ``<script>``, each carrying
the response's CSP nonce. Every text from the question or the schema is HTML-escaped; the
script's data travels as a JSON data block with ``<`` escaped. A field's value is written back
after a refused submission, except a password's, which is never sent back: the field says it
must be typed again.
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any, Final

from erlmcp_py.actors.pages import PageQuestion
from erlmcp_py.core.i18n import CATALOG, Texts
from erlmcp_py.transports._page_fields import PageField

__all__ = ["render_form", "render_notice"]

_STYLE: Final = """
:root{color-scheme:light dark;--fg:#1b1f24;--bg:#f3f4f6;--card:#fff;--line:#c9ced6;
--accent:#1f5fbf;--err:#b3261e;--muted:#57606a}
@media (prefers-color-scheme:dark){:root{--fg:#e6e8eb;--bg:#0f1115;--card:#1a1d23;
--line:#3a404a;--accent:#7aa7ff;--err:#ff8a80;--muted:#a0a8b3}}
*{box-sizing:border-box}
body{margin:0;font:16px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
color:var(--fg);background:var(--bg)}
.backdrop{min-height:100vh;display:flex;align-items:flex-start;justify-content:center;
padding:32px 16px}
.dialog{background:var(--card);border:1px solid var(--line);border-radius:12px;
width:100%;max-width:560px;padding:24px;box-shadow:0 8px 28px rgba(0,0,0,.12)}
h1{font-size:1.3rem;margin:0 0 8px}
.asker{margin:0 0 8px}
.message{margin:0 0 8px;white-space:pre-wrap}
.note{color:var(--muted);font-size:.9rem;margin:0 0 16px}
.countdown{font-variant-numeric:tabular-nums;color:var(--muted);font-size:.9rem;margin:0 0 12px}
.countdown.urgent{font-weight:600;color:var(--err)}
.sr-only{position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;
clip:rect(0,0,0,0);white-space:nowrap;border:0}
.field{margin:0 0 16px;border:0;padding:0}
label,legend{display:block;font-weight:600;margin:0 0 4px;padding:0}
.req{font-weight:500;font-size:.8rem;color:var(--err);margin-left:6px}
.help{color:var(--muted);font-size:.9rem;margin:2px 0 6px}
.error{color:var(--err);font-size:.9rem;margin:4px 0 0}
.error:empty{margin:0}
.retype{font-size:.9rem;margin:4px 0 0}
input[type=text],input[type=password],input[type=email],input[type=url],input[type=date],
input[type=number],select,textarea{width:100%;font:inherit;color:inherit;background:transparent;
border:1px solid var(--line);border-radius:8px;padding:8px 10px}
input[type=file]{font:inherit}
.field [aria-invalid=true]{border:2px solid var(--err);outline-color:var(--err)}
.field [role=group][aria-invalid=true]{border-radius:8px;padding:4px 8px}
.switch{display:flex;align-items:center;gap:10px;font-weight:600}
.switch input{width:2.6rem;height:1.4rem;accent-color:var(--accent)}
.choice{display:flex;align-items:center;gap:8px;margin:2px 0}
.choice label{font-weight:400;margin:0}
.actions{display:flex;gap:10px;flex-wrap:wrap;margin-top:20px}
button{font:inherit;border-radius:8px;padding:8px 16px;border:1px solid var(--line);
background:transparent;color:inherit;cursor:pointer}
button.primary{background:var(--accent);border-color:var(--accent);color:#fff}
@media (prefers-color-scheme:dark){button.primary{color:#0f1115}}
button:disabled{opacity:.5;cursor:not-allowed}
:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.alert{border-left:4px solid var(--err);padding:6px 10px;margin:0 0 16px}
.alert:empty{border:0;padding:0;margin:0}
"""

# Checks each field as the user types or changes it (touched fields only: an error appears
# under the field being edited, never under one the focus merely left, which would move the
# buttons under the pointer). A message the server wrote under a field stays until the user
# edits that field: the script checks less than the server does. Submit stays enabled (a
# disabled button gives a keyboard user's Enter nothing to say): Submit or Enter on a form
# with a problem marks every field, focuses the first one marked and says so in the alert.
# The countdown's visible text changes once a second; what screen readers hear of it is a
# separate polite region, written only when a threshold passes (every 5 minutes, each of the
# last 5 minutes, then 30 and 10 seconds). Esc sends Cancel. The server checks everything again.
_SCRIPT: Final = r"""
(function(){
"use strict";
var data=JSON.parse(document.getElementById("page-data").textContent);
var T=data.texts, form=document.getElementById("form");
if(!form){return;}
var submit=document.getElementById("submit"), alertBox=document.getElementById("form-error");
function t(key,fields){var s=T[key];for(var k in fields){s=s.split("{"+k+"}").join(fields[k]);}
return s;}
function count(key,n){return t(key+(n===1?".one":".many"),{count:n});}
function value(f){
  var el=document.getElementById(f.id);
  if(f.kind==="multi"){var out=[];el.querySelectorAll("input[type=checkbox]").forEach(
    function(c){if(c.checked){out.push(c.value);}});return out;}
  if(f.kind==="switch"){return el.checked;}
  if(f.kind==="file"){return el.files&&el.files.length?el.files[0]:null;}
  return el.value;
}
function problem(f){
  var v=value(f), r=f.rules;
  if(f.kind==="switch"){return null;}
  if(f.kind==="multi"){
    if(f.required&&v.length===0){return t("mcp.elicitation.field_required");}
    if(r.minItems!==undefined&&v.length<r.minItems||r.maxItems!==undefined&&v.length>r.maxItems){
      return t("mcp.elicitation.page.choices",{lo:r.minItems||0,hi:r.maxItems===undefined?
        f.options:r.maxItems});}
    return null;}
  if(f.kind==="file"){return f.required&&!v?t("mcp.elicitation.field_required"):null;}
  if(v===""){return f.required?t("mcp.elicitation.field_required"):null;}
  if(f.kind==="number"||f.kind==="integer"){
    var n=Number(v);
    if(v.trim()===""||!isFinite(n)){return t("mcp.elicitation.page.not_number");}
    if(f.kind==="integer"&&!Number.isInteger(n)){return t("mcp.elicitation.page.not_integer");}
    if(r.minimum!==undefined&&n<r.minimum||r.exclusiveMinimum!==undefined&&n<=r.exclusiveMinimum){
      return t("mcp.elicitation.page.too_small",{n:r.minimum!==undefined?r.minimum:
        r.exclusiveMinimum});}
    if(r.maximum!==undefined&&n>r.maximum||r.exclusiveMaximum!==undefined&&n>=r.exclusiveMaximum){
      return t("mcp.elicitation.page.too_large",{n:r.maximum!==undefined?r.maximum:
        r.exclusiveMaximum});}
    return null;}
  var len=Array.from(v).length;
  if(r.minLength!==undefined&&len<r.minLength){return t("mcp.elicitation.page.too_short",
    {n:r.minLength});}
  if(r.maxLength!==undefined&&len>r.maxLength){return t("mcp.elicitation.page.too_long",
    {n:r.maxLength});}
  if(f.kind==="email"&&!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(v)){
    return t("mcp.elicitation.page.not_email");}
  if(f.kind==="url"){try{var u=new URL(v);if(!/^https?:$/.test(u.protocol)){throw 0;}}
    catch(e){return t("mcp.elicitation.page.not_url");}}
  if(f.kind==="date"&&!/^\d{4}-\d{2}-\d{2}$/.test(v)){return t("mcp.elicitation.page.not_date");}
  if(f.kind==="select"&&f.options.indexOf(v)<0){return t("mcp.elicitation.page.invalid");}
  if(r.pattern!==undefined){try{if(!new RegExp(r.pattern,"u").test(v)){
    return t("mcp.elicitation.page.pattern");}}catch(e){}}
  return null;
}
var touched={}, server=data.server_errors;
function show(f,msg){
  var el=document.getElementById(f.id), err=document.getElementById(f.id+"-err");
  if(msg){el.setAttribute("aria-invalid","true");if(err.textContent!==msg){err.textContent=msg;}}
  else{el.removeAttribute("aria-invalid");if(err.textContent){err.textContent="";}}
}
// The fields with a problem the script sees; touched fields show theirs (a field the server
// refused keeps the server's message until it is edited).
function check(){
  var bad=[];
  data.fields.forEach(function(f){
    var msg=problem(f);
    if(msg){bad.push(f);}
    if(touched[f.id]&&!server[f.id]){show(f,msg);}
  });
  return bad;
}
function focusField(f){
  var el=document.getElementById(f.id);
  (f.kind==="multi"?el.querySelector("input"):el).focus();
}
var said=null;
function announce(text){
  // cleared first, then written a moment later: the same words said twice are said again
  alertBox.textContent="";clearTimeout(said);
  said=setTimeout(function(){alertBox.textContent=text;},100);
}
data.fields.forEach(function(f){
  var el=document.getElementById(f.id);
  function touch(){touched[f.id]=true;delete server[f.id];check();}
  el.addEventListener("input",touch);el.addEventListener("change",touch);
  if(f.kind==="file"){el.addEventListener("change",function(){
    var file=value(f), meta=document.getElementById(f.id+"-meta");
    meta.value=file?JSON.stringify({filename:file.name,content_type:file.type||
      "application/octet-stream",size:file.size}):"";});}
});
form.addEventListener("submit",function(e){
  var action=e.submitter?e.submitter.value:"accept";
  if(action!=="accept"){return;}
  var bad=check();
  if(!bad.length){return;}
  e.preventDefault();
  bad.forEach(function(f){touched[f.id]=true;delete server[f.id];});
  check();focusField(bad[0]);announce(t("mcp.elicitation.page.fix_errors"));
});
document.addEventListener("keydown",function(e){
  if(e.key==="Escape"){e.preventDefault();form.requestSubmit(document.getElementById("cancel"));}
});
var end=Date.now()+data.remaining*1000, countdown=document.getElementById("countdown"),
  spoken=document.getElementById("countdown-live");
function clock(s){
  var h=Math.floor(s/3600), m=Math.floor(s%3600/60), ss=s%60;
  function two(n){return (n<10?"0":"")+n;}
  return (h?h+":"+two(m):m)+":"+two(ss);
}
// The threshold a number of seconds left falls under; a new one is said aloud.
function step(s){
  if(s<=10){return 10;} if(s<=30){return 30;} if(s<=300){return Math.ceil(s/60)*60;}
  return Math.ceil(s/300)*300;
}
var lastStep=null;
function tick(){
  var left=Math.max(Math.ceil((end-Date.now())/1000),0), text=t("mcp.elicitation.page.closes_in",
    {time:clock(left)});
  if(countdown.textContent!==text){countdown.textContent=text;}
  countdown.classList.toggle("urgent",left<=30);
  var now=step(left);
  if(lastStep!==null&&now<lastStep&&left>0){
    spoken.textContent=now>=60?count("mcp.elicitation.page.closes_in_minutes",now/60):
      count("mcp.elicitation.page.closes_in_seconds",now);}
  lastStep=now;
  if(left<=0){submit.disabled=true;setTimeout(function(){location.reload();},400);return;}
  setTimeout(tick,250);
}
check();tick();
var first=form.querySelector("[aria-invalid=true]")||
  form.querySelector("input:not([type=hidden]),select,textarea");
if(first){(first.getAttribute("role")==="group"?first.querySelector("input"):first).focus();}
})();
"""

#: The texts the script needs: its checks' words, the alert, the countdown.
_SCRIPT_TEXTS: Final = (
    "mcp.elicitation.field_required",
    *(
        f"mcp.elicitation.page.{name}"
        for name in (
            "choices", "invalid", "not_date", "not_email", "not_integer", "not_number",
            "not_url", "pattern", "too_large", "too_long", "too_short", "too_small",
            "fix_errors", "closes_in", "closes_in_minutes.one", "closes_in_minutes.many",
            "closes_in_seconds.one", "closes_in_seconds.many",
        )
    ),
)  # fmt: skip


def _attr(name: str, value: object) -> str:
    return f' {name}="{escape(str(value), quote=True)}"'


def _head(title: str, locale: str, nonce: str) -> str:
    return (
        f'<!doctype html>\n<html lang="{locale}"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        '<meta name="referrer" content="same-origin"><link rel="icon" href="data:,">'
        f"<title>{escape(title)}</title><style{_attr('nonce', nonce)}>{_STYLE}</style></head>"
    )


def render_notice(locale: str, nonce: str, key: str) -> str:
    """A short page that says one thing (answered, rejected, closed, not found ...)."""
    title = Texts(locale)("mcp.elicitation.page.title")
    return (
        f'{_head(title, locale, nonce)}<body><div class="backdrop">'
        '<div class="dialog" role="dialog" aria-modal="true" aria-labelledby="title">'
        f'<h1 id="title">{escape(title)}</h1>'
        f'<p id="notice" role="status">{escape(Texts(locale)(key))}</p></div></div></body></html>'
    )


def _described(f: PageField, retype: bool) -> str:
    ids = ([f"{f.id}-help"] if f.description else []) + [f"{f.id}-err"]
    if retype:
        ids.append(f"{f.id}-retype")
    return _attr("aria-describedby", " ".join(ids))


def _required_attrs(f: PageField) -> str:
    return ' required aria-required="true"' if f.required else ""


def _label(f: PageField, locale: str, tag: str = "label") -> str:
    mark = (
        f' <span class="req">{escape(Texts(locale)("mcp.elicitation.field_required"))}</span>'
        if f.required
        else ""
    )
    target = _attr("for", f.id) if tag == "label" else ""
    return f"<{tag}{target}>{escape(f.title)}{mark}</{tag}>"


_INPUT_TYPES: Final = {
    "text": "text",
    "password": "password",
    "email": "email",
    "url": "url",
    "date": "date",
    "datetime": "text",
    "number": "number",
    "integer": "number",
}


def _control(f: PageField, value: Any, locale: str, retype: bool) -> str:
    common = f"{_attr('id', f.id)}{_described(f, retype)}{_required_attrs(f)}"
    named = f"{common}{_attr('name', f.key)}"
    if f.kind == "switch":
        checked = " checked" if value is True else ""
        return f'<input type="checkbox" role="switch" value="true"{named}{checked}>'
    if f.kind == "select":
        choose = escape(Texts(locale)("mcp.elicitation.page.choose"))
        options = [f'<option value="">{choose}</option>']
        for v, title in f.options:
            selected = " selected" if value == v else ""
            options.append(f"<option{_attr('value', v)}{selected}>{escape(title)}</option>")
        return f"<select{named}>{''.join(options)}</select>"
    if f.kind == "multi":
        chosen = set(value) if isinstance(value, list) else set()
        boxes = []
        for j, (v, title) in enumerate(f.options):
            box_id = f"{f.id}-{j}"
            checked = " checked" if v in chosen else ""
            boxes.append(
                f'<div class="choice"><input type="checkbox"{_attr("id", box_id)}'
                f"{_attr('name', f.key)}{_attr('value', v)}{checked}>"
                f"<label{_attr('for', box_id)}>{escape(title)}</label></div>"
            )
        return f'<div role="group"{common}>{"".join(boxes)}</div>'
    if f.kind == "file":
        accept = _attr("accept", f.accept) if f.accept else ""
        return (
            f'<input type="file"{common}{accept}>'
            f'<input type="hidden"{_attr("id", f.id + "-meta")}{_attr("name", f.key)}>'
        )
    extra = ""
    if f.placeholder:
        extra += _attr("placeholder", f.placeholder)
    elif f.kind == "datetime":
        extra += _attr("placeholder", "2026-01-31T09:00:00Z")
    rules = f.rules
    if f.kind in ("number", "integer"):
        extra += _attr("step", "1" if f.kind == "integer" else "any")
        for rule, html_name in (("minimum", "min"), ("maximum", "max")):
            if rule in rules:
                extra += _attr(html_name, rules[rule])
    elif "maxLength" in rules:
        extra += _attr("maxlength", rules["maxLength"])
    if f.kind == "password":
        extra += ' autocomplete="off"'
        value = None  # a secret is never written back into a page
    shown = "" if value is None else _attr("value", value)
    if f.kind == "textarea":
        body = "" if value is None else escape(str(value))
        return f"<textarea{named}{_attr('rows', f.rows)}{extra}>{body}</textarea>"
    return f"<input{_attr('type', _INPUT_TYPES[f.kind])}{named}{extra}{shown}>"


def _field(f: PageField, value: Any, error: str | None, locale: str, retype: bool) -> str:
    """One field; ``retype``: its secret was refused with the answer, and is not kept."""
    control = _control(f, value, locale, retype)
    if error:
        control = control.replace(f'id="{f.id}"', f'id="{f.id}" aria-invalid="true"', 1)
    help_text = (
        f'<p class="help"{_attr("id", f.id + "-help")}>{escape(f.description)}</p>'
        if f.description
        else ""
    )
    err = (
        f'<p class="error" aria-live="polite"{_attr("id", f.id + "-err")}>{escape(error or "")}</p>'
    )
    if retype:
        note = escape(Texts(locale)("mcp.elicitation.page.retype_secret"))
        err += f'<p class="retype"{_attr("id", f.id + "-retype")}>{note}</p>'

    if f.kind == "switch":
        mark = (
            f' <span class="req">{escape(Texts(locale)("mcp.elicitation.field_required"))}</span>'
            if f.required
            else ""
        )
        label = (
            f'<label class="switch"{_attr("for", f.id)}>{control} {escape(f.title)}{mark}</label>'
        )
        return f'<div class="field">{label}{help_text}{err}</div>'
    if f.kind == "multi":
        legend = _label(f, locale, "legend")
        return f'<fieldset class="field">{legend}{help_text}{control}{err}</fieldset>'
    return f'<div class="field">{_label(f, locale)}{help_text}{control}{err}</div>'


def _json_block(value: object) -> str:
    return json.dumps(value, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")


def _with_markup(template: str, **markup: str) -> str:
    """A catalog template, HTML-escaped, with its ``{placeholders}`` replaced by ``markup``
    (already escaped)."""
    out = []
    for literal, name, _, _ in string.Formatter().parse(template):
        out.append(escape(literal))
        if name:
            out.append(markup[name])
    return "".join(out)


def _asker(question: PageQuestion, locale: str) -> str:
    """Who asks (the server, and its tool), or nothing when the ticket does not say."""
    if not question.server:
        return ""
    names = {"server": f"<strong>{escape(question.server)}</strong>"}
    key = "mcp.elicitation.page.asked_by_server"
    if question.tool:
        names["tool"] = f"<strong>{escape(question.tool)}</strong>"
        key = "mcp.elicitation.page.asked_by"
    return f'<p class="asker" id="asker">{_with_markup(CATALOG[key][locale], **names)}</p>'


def render_form(
    *,
    locale: str,
    nonce: str,
    action: str,
    csrf: str,
    question: PageQuestion,
    fields: Sequence[PageField],
    remaining_s: float,
    values: Mapping[str, Any] | None = None,
    errors: Mapping[str, str] | None = None,
    form_errors: Sequence[str] = (),
) -> str:
    """The form dialog.

    Args:
        locale: The page's locale.
        nonce: The response's CSP nonce.
        action: The form's own path (``/elicit/{token}``).
        csrf: The ticket's CSRF value.
        question: What is asked, and who asks.
        fields: The fields, in order.
        remaining_s: Seconds until the elicitation's deadline (the countdown).
        values: A refused submission's values (``None``: a fresh form, with the defaults).
        errors: Per field key, the server's error.
        form_errors: Errors about the answer as a whole.
    """
    errors = errors or {}
    refused = values is not None
    values = values if values is not None else {f.key: f.default for f in fields}
    t = Texts(locale)
    title = t("mcp.elicitation.page.title")
    body = "".join(
        _field(
            f,
            values.get(f.key),
            errors.get(f.key),
            locale,
            retype=refused and f.kind == "password" and values.get(f.key) is not None,
        )
        for f in fields
    )
    said = list(form_errors)
    if errors:
        said.insert(0, t("mcp.elicitation.page.fix_errors"))
    # Always there, empty or not: a live region must exist before the script writes into it.
    alert = f'<p class="alert" role="alert" id="form-error">{escape(" ".join(said))}</p>'
    data = {
        "remaining": max(remaining_s, 0.0),
        "texts": {k: CATALOG[k][locale] for k in _SCRIPT_TEXTS},  # templates: the script fills them
        "fields": [
            {
                "id": f.id,
                "kind": f.kind,
                "required": f.required,
                "rules": dict(f.rules),
                "options": [v for v, _ in f.options],
            }
            for f in fields
        ],
        "server_errors": {f.id: True for f in fields if f.key in errors},
    }
    buttons = (
        f'<button type="submit" class="primary" id="submit" name="_action" value="accept">'
        f"{escape(t('mcp.elicitation.action.accept'))}</button>"
        f'<button type="submit" id="reject" name="_action" value="decline" formnovalidate>'
        f"{escape(t('mcp.elicitation.action.reject'))}</button>"
        f'<button type="submit" id="cancel" name="_action" value="cancel" formnovalidate>'
        f"{escape(t('mcp.elicitation.action.cancel'))}</button>"
    )
    asker = _asker(question, locale)
    described = "asker message" if asker else "message"
    head_title = f"{title} · {question.server}" if question.server else title
    return (
        f'{_head(head_title, locale, nonce)}<body><div class="backdrop">'
        '<div class="dialog" role="dialog" aria-modal="true" aria-labelledby="title"'
        f"{_attr('aria-describedby', described)}>"
        f'<h1 id="title">{escape(title)}</h1>{asker}'
        f'<p class="message" id="message">{escape(question.message)}</p>'
        f'<p class="note">{escape(t("mcp.elicitation.page.secure_note"))}</p>'
        '<p class="countdown" id="countdown" role="timer"></p>'
        '<p class="sr-only" id="countdown-live" aria-live="polite" aria-atomic="true"></p>'
        f"{alert}"
        f'<form id="form" method="post" novalidate{_attr("action", action)}>'
        f'<input type="hidden" name="_csrf"{_attr("value", csrf)}>'
        f'{body}<div class="actions">{buttons}</div></form></div></div>'
        f'<script type="application/json" id="page-data">{_json_block(data)}</script>'
        f"<script{_attr('nonce', nonce)}>{_SCRIPT}</script></body></html>"
    )
