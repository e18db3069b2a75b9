"""The hosted elicitation page's HTML: the form dialog, and the short pages around it.

Everything is inline (no external asset): one ``<style>`` and one ``<script>``, each carrying
the response's CSP nonce. Every text from the question or the schema is HTML-escaped; the
script's data travels as a JSON data block with ``<`` escaped. A field's value is written back
after a refused submission, except a password's, which is never sent back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any, Final

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
.message{margin:0 0 8px;white-space:pre-wrap}
.note,.status{color:var(--muted);font-size:.9rem;margin:0 0 16px}
.countdown{font-weight:600;color:var(--err);margin:0 0 12px}
.field{margin:0 0 16px;border:0;padding:0}
label,legend{display:block;font-weight:600;margin:0 0 4px;padding:0}
.req{font-weight:500;font-size:.8rem;color:var(--err);margin-left:6px}
.help{color:var(--muted);font-size:.9rem;margin:2px 0 6px}
.error{color:var(--err);font-size:.9rem;margin:4px 0 0;min-height:0}
.error:empty{display:none}
input[type=text],input[type=password],input[type=email],input[type=url],input[type=date],
input[type=number],select,textarea{width:100%;font:inherit;color:inherit;background:transparent;
border:1px solid var(--line);border-radius:8px;padding:8px 10px}
input[type=file]{font:inherit}
[aria-invalid=true]{border-color:var(--err);outline-color:var(--err)}
.switch{display:flex;align-items:center;gap:10px;font-weight:600}
.switch input{width:2.6rem;height:1.4rem;accent-color:var(--accent)}
.choice{display:flex;align-items:center;gap:8px;margin:2px 0}
.choice label{font-weight:400;margin:0}
.actions{display:flex;gap:10px;flex-wrap:wrap;margin-top:20px}
button{font:inherit;border-radius:8px;padding:8px 16px;border:1px solid var(--line);
background:transparent;color:inherit;cursor:pointer}
button.primary{background:var(--accent);border-color:var(--accent);color:#fff}
button:disabled{opacity:.5;cursor:not-allowed}
:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.alert{border-left:4px solid var(--err);padding:6px 10px;margin:0 0 16px}
"""

# Checks each field as the user types or changes it (touched fields only: an error appears
# under the field being edited, never under one the focus merely left, which would move the
# buttons under the pointer), keeps Submit disabled while a
# required field is empty or a field breaks a rule, counts down the last 30 s, and sends the
# Cancel button on Esc. The server checks everything again.
_SCRIPT: Final = r"""
(function(){
"use strict";
var data=JSON.parse(document.getElementById("page-data").textContent);
var T=data.texts, form=document.getElementById("form");
if(!form){return;}
var submit=document.getElementById("submit");
function t(key,fields){var s=T[key];for(var k in fields){s=s.split("{"+k+"}").join(fields[k]);}
return s;}
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
var touched={};
function show(f,msg){
  var el=document.getElementById(f.id), err=document.getElementById(f.id+"-err");
  if(msg){el.setAttribute("aria-invalid","true");err.textContent=msg;}
  else{el.removeAttribute("aria-invalid");err.textContent="";}
}
function check(){
  var ok=true;
  data.fields.forEach(function(f){
    var msg=problem(f);
    if(msg){ok=false;}
    if(touched[f.id]||data.server_errors[f.id]){show(f,msg);}
  });
  submit.disabled=!ok;
  return ok;
}
data.fields.forEach(function(f){
  var el=document.getElementById(f.id);
  function touch(){touched[f.id]=true;delete data.server_errors[f.id];check();}
  el.addEventListener("input",touch);el.addEventListener("change",touch);
  if(f.kind==="file"){el.addEventListener("change",function(){
    var file=value(f), meta=document.getElementById(f.id+"-meta");
    meta.value=file?JSON.stringify({filename:file.name,content_type:file.type||
      "application/octet-stream",size:file.size}):"";});}
});
form.addEventListener("submit",function(e){
  var action=e.submitter?e.submitter.value:"accept";
  if(action==="accept"&&!check()){
    data.fields.forEach(function(f){touched[f.id]=true;});check();e.preventDefault();
    var bad=form.querySelector("[aria-invalid=true]");if(bad){bad.focus();}
  }
});
document.addEventListener("keydown",function(e){
  if(e.key==="Escape"){e.preventDefault();form.requestSubmit(document.getElementById("cancel"));}
});
var end=Date.now()+data.remaining*1000, countdown=document.getElementById("countdown");
function tick(){
  var left=Math.ceil((end-Date.now())/1000);
  if(left<=30){countdown.hidden=false;
    countdown.textContent=t("mcp.elicitation.timeout_warning",{seconds:Math.max(left,0)});}
  if(left<=0){submit.disabled=true;setTimeout(function(){location.reload();},400);return;}
  setTimeout(tick,250);
}
check();tick();
var first=form.querySelector("[aria-invalid=true]")||
  form.querySelector("input:not([type=hidden]),select,textarea");
if(first){first.focus();}
})();
"""

#: The texts the script needs (all the validation words, the countdown, Required).
_SCRIPT_TEXTS: Final = tuple(
    k
    for k in CATALOG
    if k.startswith("mcp.elicitation.page.")
    or k in ("mcp.elicitation.field_required", "mcp.elicitation.timeout_warning")
)


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


def _described(f: PageField) -> str:
    ids = ([f"{f.id}-help"] if f.description else []) + [f"{f.id}-err"]
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


def _control(f: PageField, value: Any, locale: str) -> str:
    common = f"{_attr('id', f.id)}{_described(f)}{_required_attrs(f)}"
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


def _field(f: PageField, value: Any, error: str | None, locale: str) -> str:
    control = _control(f, value, locale)
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


def render_form(
    *,
    locale: str,
    nonce: str,
    action: str,
    csrf: str,
    message: str,
    fields: Sequence[PageField],
    remaining_s: float,
    values: Mapping[str, Any] | None = None,
    errors: Mapping[str, str] | None = None,
    form_error: str | None = None,
) -> str:
    """The form dialog.

    Args:
        locale: The page's locale.
        nonce: The response's CSP nonce.
        action: The form's own path (``/elicit/{token}``).
        csrf: The ticket's CSRF value.
        message: The elicitation's message.
        fields: The fields, in order.
        remaining_s: Seconds until the elicitation's deadline (the countdown).
        values: Values to show (defaults, or a refused submission's).
        errors: Per field key, the server's error.
        form_error: An error about the answer as a whole.
    """
    errors = errors or {}
    values = values if values is not None else {f.key: f.default for f in fields}
    title = Texts(locale)("mcp.elicitation.page.title")
    body = "".join(_field(f, values.get(f.key), errors.get(f.key), locale) for f in fields)
    alert = ""
    if errors or form_error:
        summary = form_error or Texts(locale)("mcp.elicitation.page.fix_errors")
        alert = f'<p class="alert" role="alert" id="form-error">{escape(summary)}</p>'
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
        f"{escape(Texts(locale)('mcp.elicitation.action.accept'))}</button>"
        f'<button type="submit" id="reject" name="_action" value="decline" formnovalidate>'
        f"{escape(Texts(locale)('mcp.elicitation.action.reject'))}</button>"
        f'<button type="submit" id="cancel" name="_action" value="cancel" formnovalidate>'
        f"{escape(Texts(locale)('mcp.elicitation.action.cancel'))}</button>"
    )
    return (
        f'{_head(title, locale, nonce)}<body><div class="backdrop">'
        '<div class="dialog" role="dialog" aria-modal="true" aria-labelledby="title" '
        'aria-describedby="message">'
        f'<p class="status" role="status" id="opening">'
        f"{escape(Texts(locale)('mcp.elicitation.url_mode.opening'))}</p>"
        f'<h1 id="title">{escape(title)}</h1>'
        f'<p class="message" id="message">{escape(message)}</p>'
        f'<p class="note">{escape(Texts(locale)("mcp.elicitation.page.secure_note"))}</p>'
        '<p class="countdown" id="countdown" role="timer" aria-live="polite" hidden></p>'
        f"{alert}"
        f'<form id="form" method="post" novalidate{_attr("action", action)}>'
        f'<input type="hidden" name="_csrf"{_attr("value", csrf)}>'
        f'{body}<div class="actions">{buttons}</div></form></div></div>'
        f'<script type="application/json" id="page-data">{_json_block(data)}</script>'
        f"<script{_attr('nonce', nonce)}>{_SCRIPT}</script></body></html>"
    )
