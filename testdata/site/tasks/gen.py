#!/usr/bin/env python3
"""Writes the task pages of testdata/site/tasks (see tasks.json).

The pages are static files; this script is how they were made, so a change
to the shared header or footer is one edit here. Run it from this folder:
    python3 gen.py
Its output is deterministic (a seeded random), so rerunning it changes
nothing unless the script changed.
"""
import html
import json
import random
import urllib.parse

R = random.Random(20261206)
E = html.escape

NAV = ["Shop all", "New arrivals", "Best sellers", "Lighting", "Furniture", "Kitchen", "Textiles",
       "Garden", "Storage", "Outdoor", "Bath", "Office", "Kids", "Pets", "Gifts", "Sale", "Brands",
       "Inspiration", "Room ideas", "Stores", "Gift cards", "Trade program"]
UTIL = [("Help center", "/tasks/help.html"), ("Track an order", "/tasks/orders.html"),
        ("Returns", "/tasks/help.html#returns"), ("Blog", "/tasks/blog.html"),
        ("Your account", "/tasks/login.html")]
FOOT = {
    "Customer service": ["Contact us", "Shipping information", "Returns and exchanges", "Warranty",
                         "Product recalls", "Assembly service", "Price match", "Accessibility"],
    "About Northwind": ["Our story", "Sustainability", "Press room", "Investor relations", "Careers",
                        "Supplier code", "Modern slavery statement", "Affiliates"],
    "Ways to shop": ["Find a store", "Click and collect", "Design consultations", "Business accounts",
                     "Student discount", "Northwind credit card", "Registry", "Catalog request"],
    "Resources": ["Care guides", "Size guides", "Room planner", "Buying guides", "Recycling program",
                  "Developer docs", "Status page", "Sitemap"],
}

CSS = """
*{box-sizing:border-box}body{margin:0;font:15px/1.5 system-ui,sans-serif;color:#222;background:#fafafa}
a{color:#1a56a8}header.site{background:#14213d;color:#fff;padding:.5rem 1rem}
header.site a{color:#fff;text-decoration:none;margin-right:.8rem;font-size:.9rem}
.top{display:flex;justify-content:space-between;align-items:center}.brand{font-weight:700;font-size:1.3rem}
nav.main{margin-top:.4rem;white-space:nowrap;overflow-x:auto}.promo{background:#fca311;padding:.3rem 1rem;font-size:.85rem}
.wrap{display:flex;gap:1.5rem;padding:1rem;max-width:1200px;margin:auto}main{flex:1;min-width:0}
aside.side{width:230px;flex:none;font-size:.9rem}footer.site{background:#e5e5e5;padding:1.5rem 1rem;margin-top:2rem;font-size:.85rem}
footer.site .cols{display:flex;gap:2rem;flex-wrap:wrap}footer.site ul{list-style:none;padding:0}
.crumbs{font-size:.85rem;color:#555}.error{color:#b00020;font-size:.85rem;margin-left:.5rem}
.field{margin:.5rem 0}label{display:inline-block;min-width:9rem}input,select,textarea{font:inherit;padding:.25rem}
button{font:inherit;padding:.35rem .8rem;cursor:pointer}table{border-collapse:collapse;width:100%}
td,th{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left}.muted{color:#666;font-size:.85rem}
.card{background:#fff;border:1px solid #ddd;border-radius:6px;padding:.6rem}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:.8rem}
.toast{position:fixed;bottom:1rem;right:1rem;background:#14213d;color:#fff;padding:.6rem 1rem;border-radius:4px}
"""


def header(cart=None):
    nav = "".join(f'<a href="/tasks/shop.html?c={urllib.parse.quote(n)}">{E(n)}</a>' for n in NAV)
    util = "".join(f'<a href="{h}">{E(n)}</a>' for n, h in UTIL)
    cart_link = f'<a id="cart-link" href="/tasks/cart.html">{E(cart)}</a>' if cart else ""
    return f"""<div class="promo">Free delivery on orders over $75. <a href="/tasks/help.html#delivery">See delivery details</a></div>
<header class="site"><div class="top"><a class="brand" href="/tasks/index.html">Northwind Home</a>
<div class="util">{util}{cart_link}</div></div>
<nav class="main" aria-label="Main">{nav}</nav></header>"""


def footer():
    cols = "".join(
        f'<section><h2>{E(t)}</h2><ul>' + "".join(f'<li><a href="/tasks/help.html#{E(n.lower().replace(" ", "-"))}">{E(n)}</a></li>' for n in ls) + "</ul></section>"
        for t, ls in FOOT.items())
    return f"""<footer class="site"><div class="cols">{cols}</div>
<p>Sign up for our newsletter: ideas for every room, once a week. <a href="/tasks/help.html#newsletter">Newsletter preferences</a></p>
<p class="muted">&copy; 2026 Northwind Home, Inc. All prices in US dollars. <a href="/tasks/help.html#privacy">Privacy policy</a> &middot; <a href="/tasks/help.html#terms">Terms of use</a> &middot; <a href="/tasks/help.html#cookies">Cookie settings</a></p></footer>"""


def page(name, title, body, side="", cart=None, script="", head=""):
    side_html = f'<aside class="side">{side}</aside>' if side else ""
    doc = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{E(title)} | Northwind Home</title><style>{CSS}</style>{head}</head>
<body>
{header(cart)}
<div class="wrap">{side_html}<main>
{body}
</main></div>
{footer()}
{"<script>" + script + "</script>" if script else ""}
</body></html>
"""
    with open(name, "w") as f:
        f.write(doc)


def help_side():
    topics = ["Orders and delivery", "Returns and refunds", "Payments", "Your account", "Product care",
              "Assembly", "Gift cards", "Stores and services", "Business accounts", "Safety notices"]
    return "<h2>Help topics</h2><ul>" + "".join(f'<li><a href="/tasks/help.html#t{i}">{E(t)}</a></li>' for i, t in enumerate(topics)) + "</ul>"


# ---- 1. login -> dashboard ----
page("login.html", "Sign in", """<p class="crumbs"><a href="/tasks/index.html">Home</a> / Sign in</p>
<h1>Sign in to your account</h1>
<p>Track orders, save favorites and check out faster.</p>
<form id="login" novalidate>
<div class="field"><label for="email">Email</label><input id="email" type="email" autocomplete="username"></div>
<div class="field"><label for="password">Password</label><input id="password" type="password" autocomplete="current-password"></div>
<div class="field"><input id="remember" type="checkbox"> <label for="remember">Keep me signed in</label></div>
<p id="login-error" role="alert" class="error"></p>
<button type="submit">Sign in</button> <a href="/tasks/help.html#password">Forgot your password?</a>
</form>
<h2>New to Northwind?</h2><p>Create an account to get 10% off your first order. <a href="/tasks/register.html">Create an account</a></p>""",
     side=help_side(), script="""
document.getElementById('login').addEventListener('submit', (e) => {
  e.preventDefault();
  const email = document.getElementById('email').value.trim(), pw = document.getElementById('password').value;
  if (email === 'ada@example.com' && pw === 'correct horse') { location.href = '/tasks/dashboard.html'; return; }
  document.getElementById('login-error').textContent = 'Wrong email or password. Try again or reset your password.';
});""")

recent = "".join(f'<tr><td><a href="/tasks/order.html?id={1000 + i}">Order {1000 + i}</a></td><td>2026-0{1 + i % 9}-1{i % 9}</td><td>Delivered</td></tr>' for i in range(1, 9))
page("dashboard.html", "Your account", f"""<h1>Welcome back, Ada</h1>
<p>You have 2 orders on their way and 340 reward points.</p>
<section><h2>Recent orders</h2><table><thead><tr><th>Order</th><th>Date</th><th>Status</th></tr></thead><tbody>{recent}</tbody></table></section>
<section><h2>Saved addresses</h2><p>12 Analytical Row, London N1 7GU, United Kingdom</p></section>
<section><h2>Recommended for you</h2><ul>{"".join(f'<li><a href="/tasks/product.html?id={i}">Recommendation {i}</a></li>' for i in range(1, 7))}</ul></section>""",
     side=help_side())

# ---- catalog (search, results, product) ----
ADJ = ["Brass", "Walnut", "Oak", "Linen", "Ceramic", "Matte black", "Smoked glass", "Rattan", "Marble", "Copper",
       "Pleated", "Arched", "Mini", "Tall", "Adjustable", "Vintage", "Nordic", "Industrial", "Globe", "Swing-arm"]
LAMPS = ["desk lamp", "floor lamp", "table lamp", "pendant lamp", "wall lamp"]
results = []
seen = set()
while len(results) < 40:
    n = f"{R.choice(ADJ)} {R.choice(LAMPS)}"
    if n in seen:
        continue
    seen.add(n)
    results.append({"id": len(results) + 1, "name": n, "price": round(R.uniform(29, 420), 2),
                    "rating": round(R.uniform(3.1, 5.0), 1), "reviews": R.randint(3, 900)})
TARGET = results[6]  # the result the search task opens

page("search.html", "Search", """<h1>Search the catalog</h1>
<form action="/tasks/results.html" role="search">
<label for="q">Search products</label> <input id="q" name="q" type="search" placeholder="Try: lamp, sofa, rug">
<button type="submit">Search</button></form>
<h2>Popular searches</h2><ul>""" + "".join(f'<li><a href="/tasks/results.html?q={w}">{w.capitalize()} ideas</a></li>' for w in ["lamp", "sofa", "rug", "mirror", "shelf", "planter"]) + "</ul>",
     side=help_side())

res_items = "".join(
    f"""<li class="card"><h2><a href="/tasks/product.html?id={r['id']}">{E(r['name'])}</a></h2>
<p>{E(r['name'])} with a weighted base and a {R.choice(['fabric', 'metal', 'glass', 'paper'])} shade; {R.choice(['dimmable', 'two brightness levels', 'warm white bulb included', 'energy class A'])}. Rated {r['rating']} out of 5 by {r['reviews']} customers.</p>
<p><strong>${r['price']:.2f}</strong> &middot; <span class="muted">Ships in {R.randint(1, 9)} days</span></p></li>"""
    for r in results)
page("results.html", "Search results", f"""<p class="crumbs"><a href="/tasks/index.html">Home</a> / Search</p>
<h1 id="heading">Search results</h1>
<p role="status"><span id="count">40 results</span> for <q id="query"></q></p>
<form action="/tasks/results.html" role="search"><label for="q2">Refine your search</label> <input id="q2" name="q" type="search"> <button type="submit">Search again</button></form>
<ol class="results">{res_items}</ol>
<nav aria-label="Results pages"><span>Page 1 of 1</span></nav>""",
     side="<h2>Refine</h2><ul>" + "".join(f'<li><a href="/tasks/results.html?q=lamp&amp;f={k}">{E(k)}</a></li>' for k in ADJ) + "</ul>",
     script="""const q = new URLSearchParams(location.search).get('q') || '';
document.getElementById('query').textContent = q; document.getElementById('q2').value = q;""")

page("product.html", "Product", """<p class="crumbs"><a href="/tasks/index.html">Home</a> / <a href="/tasks/shop.html?c=Lighting">Lighting</a> / <span id="crumb"></span></p>
<h1 id="name">Product</h1>
<p id="price"></p><p id="stock">In stock: ships in 2 to 4 days</p>
<p>Hand-finished in small batches. Each piece is inspected before it leaves our workshop. Bulb sold separately unless noted.</p>
<h2>Details</h2><ul><li>Height: 42 cm</li><li>Cable: 1.8 m, fabric covered</li><li>Switch: inline</li><li>Care: wipe with a dry cloth</li></ul>
<h2>Reviews</h2><p id="reviews"></p>
<button type="button" onclick="this.textContent='Added'">Add to bag</button>""",
     side=help_side(), script="const CATALOG = " + json.dumps(results) + """;
const p = CATALOG.find((x) => x.id === Number(new URLSearchParams(location.search).get('id'))) || CATALOG[0];
document.getElementById('name').textContent = p.name; document.getElementById('crumb').textContent = p.name;
document.title = p.name + ' | Northwind Home';
document.getElementById('price').textContent = '$' + p.price.toFixed(2);
document.getElementById('reviews').textContent = 'Rated ' + p.rating + ' out of 5 (' + p.reviews + ' reviews)';""")

# ---- 3. long form ----
def fld(id_, label, typ="text", hint="", auto=""):
    h = f' <span class="muted">{E(hint)}</span>' if hint else ""
    a = f' autocomplete="{auto}"' if auto else ""
    return f'<div class="field"><label for="{id_}">{E(label)}</label><input id="{id_}" name="{id_}" type="{typ}"{a} aria-describedby="{id_}-error"><span class="error" id="{id_}-error"></span>{h}</div>'

COUNTRIES = ["Argentina", "Australia", "Austria", "Belgium", "Brazil", "Canada", "Chile", "Denmark", "Finland", "France",
             "Germany", "Greece", "India", "Ireland", "Italy", "Japan", "Mexico", "Netherlands", "New Zealand", "Norway",
             "Poland", "Portugal", "South Africa", "Spain", "Sweden", "Switzerland", "United Kingdom", "United States"]
form = "".join([
    "<fieldset><legend>About you</legend>",
    fld("first", "First name", auto="given-name"), fld("last", "Last name", auto="family-name"),
    fld("email", "Email address", "email", auto="email"), fld("phone", "Phone number", "tel", auto="tel"),
    fld("dob", "Date of birth", "text", "optional, DD/MM/YYYY"), fld("company", "Company", hint="optional"),
    fld("jobtitle", "Job title", hint="optional"), fld("website", "Website", "url", "optional"),
    "</fieldset><fieldset><legend>Address</legend>",
    fld("street", "Street address", auto="address-line1"), fld("street2", "Apartment, suite, etc.", hint="optional"),
    fld("city", "City", auto="address-level2"), fld("region", "State or province", hint="optional"),
    fld("postal", "Postal code", auto="postal-code"),
    '<div class="field"><label for="country">Country</label><select id="country" name="country" aria-describedby="country-error"><option value="">Choose a country</option>'
    + "".join(f"<option>{c}</option>" for c in COUNTRIES) + '</select><span class="error" id="country-error"></span></div>',
    "</fieldset><fieldset><legend>Account type</legend>",
    '<div class="field"><input type="radio" id="personal" name="type" value="personal" checked> <label for="personal">Personal</label>',
    '<input type="radio" id="business" name="type" value="business"> <label for="business">Business</label></div>',
    fld("vat", "VAT number", hint="business accounts only, optional"),
    "</fieldset><fieldset><legend>Preferences</legend>",
    '<div class="field"><label for="heard">How did you hear about us?</label><select id="heard"><option>Choose one</option><option>Search engine</option><option>A friend</option><option>Social media</option><option>Catalog</option><option>In a store</option></select></div>',
    '<div class="field"><input type="checkbox" id="news" checked> <label for="news">Send me the weekly newsletter</label></div>',
    '<div class="field"><input type="checkbox" id="offers"> <label for="offers">Send me offers from partners</label></div>',
    '<div class="field"><label for="notes">Anything else we should know?</label><textarea id="notes" rows="3"></textarea></div>',
    '<div class="field"><input type="checkbox" id="terms" aria-describedby="terms-error"> <label for="terms">I agree to the terms of use</label><span class="error" id="terms-error"></span></div>',
    "</fieldset>",
])
page("register.html", "Create an account", f"""<p class="crumbs"><a href="/tasks/index.html">Home</a> / Create an account</p>
<div id="form-area"><h1>Create an account</h1>
<p>All fields are required unless marked optional.</p>
<div id="summary" role="alert"></div>
<form id="register" novalidate>{form}
<button type="submit">Create account</button></form></div>
<div id="done" hidden><h1>Account created</h1><p id="thanks"></p><p><a href="/tasks/dashboard.html">Go to your account</a></p></div>""",
     side=help_side(), script="""
const REQUIRED = {first: 'Enter your first name', last: 'Enter your last name', email: 'Enter an email address like name@example.com',
  phone: 'Enter a phone number', street: 'Enter a street address', city: 'Enter a city', postal: 'Enter a postal code',
  country: 'Choose a country', terms: 'You must agree to the terms of use'};
document.getElementById('register').addEventListener('submit', (e) => {
  e.preventDefault();
  let bad = 0;
  for (const [id, msg] of Object.entries(REQUIRED)) {
    const el = document.getElementById(id);
    const ok = el.type === 'checkbox' ? el.checked : id === 'email' ? /^[^@ ]+@[^@ ]+\\.[^@ ]+$/.test(el.value) : el.value.trim() !== '';
    document.getElementById(id + '-error').textContent = ok ? '' : msg;
    el.setAttribute('aria-invalid', ok ? 'false' : 'true');
    if (!ok) bad++;
  }
  document.getElementById('summary').textContent = bad ? 'There is a problem: ' + bad + (bad === 1 ? ' field needs' : ' fields need') + ' attention.' : '';
  if (bad) return;
  document.getElementById('form-area').hidden = true;
  document.getElementById('done').hidden = false;
  document.getElementById('thanks').textContent = 'Thanks, ' + document.getElementById('first').value + '! Your ' +
    (document.getElementById('business').checked ? 'business' : 'personal') + ' account is ready.';
});""")

# ---- 4. orders table + detail ----
FIRST = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Margaret", "Ken", "Frances", "John", "Radia", "Linus",
         "Hedy", "Tim", "Katherine", "Dennis", "Sophie", "Niklaus", "Karen", "Guido"]
LAST = ["Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Hamilton", "Thompson", "Allen", "Backus",
        "Perlman", "Torvalds", "Lamarr", "Berners-Lee", "Johnson", "Ritchie", "Wilson", "Wirth", "Jones", "van Rossum"]
STATUSES = ["Pending", "Paid", "Shipped", "Delivered", "Cancelled", "Refunded"]
orders = []
for i in range(200):
    oid = 1001 + i
    cust = f"{R.choice(FIRST)} {R.choice(LAST)}"
    st = R.choice(STATUSES)
    orders.append({"id": oid, "customer": cust, "status": st, "items": R.randint(1, 7),
                   "total": round(R.uniform(12, 900), 2), "date": f"2026-{R.randint(1, 11):02d}-{R.randint(1, 28):02d}"})
# The order the task looks for: the only one of its customer (no other
# is an Okafor).
orders[141].update(customer="Grace Okafor", status="Refunded", total=312.40, items=3, date="2026-10-14")
rows = "".join(
    f'<tr><td><a href="/tasks/order.html?id={o["id"]}">Order {o["id"]}</a></td><td>{o["date"]}</td><td>{E(o["customer"])}</td>'
    f'<td>{o["status"]}</td><td>{o["items"]}</td><td>${o["total"]:.2f}</td></tr>' for o in orders)
with open("data/orders.js", "w") as f:
    f.write("// The orders of orders.html and order.html (made by gen.py).\nconst ORDERS = " + json.dumps(orders) + ";\n")
page("orders.html", "Orders", f"""<p class="crumbs"><a href="/tasks/index.html">Home</a> / <a href="/tasks/dashboard.html">Account</a> / Orders</p>
<h1>Orders</h1>
<div class="field"><label for="filter">Filter by customer or order number</label><input id="filter" type="search">
<label for="status">Status</label><select id="status"><option value="">All statuses</option>{"".join(f"<option>{s}</option>" for s in STATUSES)}</select></div>
<p role="status" id="shown">Showing 200 of 200 orders</p>
<table id="orders"><caption>Orders placed in 2026</caption><thead><tr><th>Order</th><th>Date</th><th>Customer</th><th>Status</th><th>Items</th><th>Total</th></tr></thead>
<tbody>{rows}</tbody></table>""",
     side=help_side(), script="""
const filter = document.getElementById('filter'), status = document.getElementById('status');
function apply() {
  const q = filter.value.trim().toLowerCase(), s = status.value;
  let n = 0;
  for (const tr of document.querySelectorAll('#orders tbody tr')) {
    const c = tr.cells;
    const show = (!q || c[0].textContent.toLowerCase().includes(q) || c[2].textContent.toLowerCase().includes(q)) && (!s || c[3].textContent === s);
    tr.hidden = !show;
    if (show) n++;
  }
  document.getElementById('shown').textContent = 'Showing ' + n + ' of 200 orders';
}
filter.addEventListener('input', apply); status.addEventListener('change', apply);""")
page("order.html", "Order", """<p class="crumbs"><a href="/tasks/index.html">Home</a> / <a href="/tasks/orders.html">Orders</a> / <span id="crumb"></span></p>
<h1 id="title">Order</h1>
<dl><dt>Customer</dt><dd id="customer"></dd><dt>Placed on</dt><dd id="date"></dd><dt>Status</dt><dd id="status"></dd><dt>Items</dt><dd id="items"></dd><dt>Total</dt><dd id="total"></dd></dl>
<h2>Delivery</h2><p>Standard delivery, signature required.</p>
<p><a href="/tasks/orders.html">Back to orders</a></p>""",
     side=help_side(), head='<script src="/tasks/data/orders.js"></script>', script="""
const o = ORDERS.find((x) => x.id === Number(new URLSearchParams(location.search).get('id')));
if (o) {
  document.getElementById('title').textContent = 'Order ' + o.id + ' for ' + o.customer;
  document.getElementById('crumb').textContent = 'Order ' + o.id;
  for (const k of ['customer', 'date', 'status', 'items']) document.getElementById(k).textContent = o[k];
  document.getElementById('total').textContent = '$' + o.total.toFixed(2);
} else document.getElementById('title').textContent = 'Order not found';""")

# ---- 5. account menu (an app page) ----
projects = "".join(f'<li class="card"><h3><a href="/tasks/app.html#p{i}">Project {E(n)}</a></h3><p class="muted">{R.randint(2, 40)} open tasks &middot; updated {R.randint(1, 30)} days ago</p></li>'
                   for i, n in enumerate(["Kitchen remodel", "Spring catalog", "Store 14 refit", "Supplier audit", "Website relaunch",
                                          "Holiday campaign", "Warehouse move", "Loyalty program", "Trade fair", "Photo shoot"]))
page("app.html", "Workspace", f"""<div class="top"><h1>Workspace</h1>
<div class="menu-wrap" style="position:relative">
<button type="button" id="account-btn" aria-haspopup="menu" aria-expanded="false" aria-controls="account-menu">Account</button>
<ul id="account-menu" role="menu" aria-labelledby="account-btn" hidden style="position:absolute;right:0;background:#fff;border:1px solid #ccc;list-style:none;padding:.3rem;margin:0;min-width:10rem">
<li role="menuitem" tabindex="-1" data-panel="profile">Profile</li><li role="menuitem" tabindex="-1" data-panel="settings">Settings</li>
<li role="menuitem" tabindex="-1" data-panel="billing">Billing</li><li role="menuitem" tabindex="-1" data-panel="team">Team members</li>
<li role="menuitem" tabindex="-1" data-panel="signout">Sign out</li></ul></div></div>
<section id="panel" aria-live="polite"><h2>Your projects</h2><ul class="grid">{projects}</ul></section>""",
     side=help_side(), script="""
const btn = document.getElementById('account-btn'), menu = document.getElementById('account-menu');
function setOpen(open) { menu.hidden = !open; btn.setAttribute('aria-expanded', String(open)); if (open) menu.querySelector('[role=menuitem]').focus(); }
btn.addEventListener('click', () => setOpen(menu.hidden));
document.addEventListener('keydown', (e) => { if (e.key === 'Escape') setOpen(false); });
const PANELS = {
  settings: '<h2>Account settings</h2><form><div class="field"><label for="disp">Display name</label><input id="disp" value="Ada Lovelace"></div>' +
    '<div class="field"><label for="tz">Time zone</label><select id="tz"><option>Europe/London</option><option>America/New_York</option></select></div>' +
    '<div class="field"><input type="checkbox" id="twofa" checked> <label for="twofa">Two-step verification</label></div></form>',
  profile: '<h2>Your profile</h2><p>Ada Lovelace, ada@example.com</p>',
  billing: '<h2>Billing</h2><p>Plan: Team, renews on 1 January.</p>',
  team: '<h2>Team members</h2><p>4 members.</p>',
  signout: '<h2>Signed out</h2>',
};
menu.addEventListener('click', (e) => {
  const item = e.target.closest('[role=menuitem]');
  if (!item) return;
  setOpen(false);
  document.getElementById('panel').innerHTML = PANELS[item.dataset.panel];
});""")

# ---- 6. checkout: item -> cart -> shipping -> payment -> review -> placed ----
CK = {"sku": "NW-2041", "name": "Walnut side table", "price": 189.00}
ck_common = """
const CHECKOUT = JSON.parse(sessionStorage.getItem('checkout') || '{}');
function save(fields) { for (const id of fields) CHECKOUT[id] = document.getElementById(id).value; sessionStorage.setItem('checkout', JSON.stringify(CHECKOUT)); }
function money(n) { return '$' + n.toFixed(2); }
"""
steps_nav = lambda cur: '<ol class="crumbs" aria-label="Checkout steps">' + "".join(
    f'<li{" aria-current=step" if s == cur else ""}>{s}</li>' for s in ["Cart", "Shipping", "Payment", "Review"]) + "</ol>"
page("item.html", CK["name"], f"""<p class="crumbs"><a href="/tasks/index.html">Home</a> / <a href="/tasks/shop.html?c=Furniture">Furniture</a> / {CK['name']}</p>
<h1>{CK['name']}</h1><p><strong>${CK['price']:.2f}</strong> &middot; SKU {CK['sku']}</p>
<p>Solid American walnut with an oiled finish. 45 cm wide, 55 cm tall. Ships flat; assembly takes about 15 minutes.</p>
<div class="field"><label for="qty">Quantity</label><select id="qty"><option>1</option><option>2</option><option>3</option><option>4</option></select></div>
<button type="button" id="add">Add to cart</button>
<h2>You may also like</h2><ul>{"".join(f'<li><a href="/tasks/product.html?id={i}">Related item {i}</a></li>' for i in range(1, 9))}</ul>""",
     side=help_side(), script=ck_common + f"""
document.getElementById('add').addEventListener('click', () => {{
  sessionStorage.setItem('checkout', JSON.stringify({{sku: '{CK['sku']}', name: '{CK['name']}', price: {CK['price']}, qty: Number(document.getElementById('qty').value)}}));
  location.href = '/tasks/cart.html';
}});""")
page("cart.html", "Your cart", f"""{steps_nav("Cart")}<h1>Your cart</h1>
<table><thead><tr><th>Item</th><th>Quantity</th><th>Price</th></tr></thead><tbody id="lines"></tbody></table>
<p>Subtotal: <strong id="subtotal"></strong> &middot; Delivery: free</p>
<button type="button" id="go">Proceed to checkout</button> <a href="/tasks/shop.html">Continue shopping</a>""",
     script=ck_common + """
if (CHECKOUT.sku) {
  document.getElementById('lines').innerHTML = '<tr><td>' + CHECKOUT.name + '</td><td>' + CHECKOUT.qty + '</td><td>' + money(CHECKOUT.price * CHECKOUT.qty) + '</td></tr>';
  document.getElementById('subtotal').textContent = money(CHECKOUT.price * CHECKOUT.qty);
} else document.getElementById('lines').innerHTML = '<tr><td colspan=3>Your cart is empty</td></tr>';
document.getElementById('go').addEventListener('click', () => { location.href = '/tasks/shipping.html'; });""")


def ck_form(name, title, cur, fields, button, nxt, extra=""):
    inputs = "".join(f'<div class="field"><label for="{i}">{E(l)}</label><input id="{i}" autocomplete="{a}"><span class="error" id="{i}-error"></span></div>' for i, l, a in fields)
    ids = json.dumps([i for i, _, _ in fields])
    page(name, title, f"""{steps_nav(cur)}<h1>{E(title)}</h1><form id="f" novalidate>{inputs}{extra}<button type="submit">{E(button)}</button></form>""",
         script=ck_common + f"""
document.getElementById('f').addEventListener('submit', (e) => {{
  e.preventDefault();
  let ok = true;
  for (const id of {ids}) {{
    const empty = document.getElementById(id).value.trim() === '';
    document.getElementById(id + '-error').textContent = empty ? 'Required' : '';
    if (empty) ok = false;
  }}
  if (!ok) return;
  save({ids});
  location.href = '{nxt}';
}});""")


ck_form("shipping.html", "Shipping address", "Shipping",
        [("fullname", "Full name", "name"), ("address", "Street address", "street-address"), ("city", "City", "address-level2"),
         ("postal", "Postal code", "postal-code")], "Continue to payment", "/tasks/payment.html",
        extra='<div class="field"><label for="method">Delivery method</label><select id="method"><option>Standard (free)</option><option>Express ($15.00)</option></select></div>')
ck_form("payment.html", "Payment", "Payment",
        [("card", "Card number", "cc-number"), ("expiry", "Expiry date", "cc-exp"), ("cvc", "Security code", "cc-csc")],
        "Review order", "/tasks/review.html")
page("review.html", "Review your order", f"""{steps_nav("Review")}<h1>Review your order</h1>
<dl><dt>Item</dt><dd id="r-item"></dd><dt>Ship to</dt><dd id="r-ship"></dd><dt>Pay with</dt><dd id="r-card"></dd><dt>Total</dt><dd id="r-total"></dd></dl>
<button type="button" id="place">Place order</button> <a href="/tasks/shipping.html">Change shipping address</a>""",
     script=ck_common + """
document.getElementById('r-item').textContent = CHECKOUT.qty + ' x ' + CHECKOUT.name;
document.getElementById('r-ship').textContent = [CHECKOUT.fullname, CHECKOUT.address, CHECKOUT.city, CHECKOUT.postal].join(', ');
document.getElementById('r-card').textContent = 'Card ending ' + String(CHECKOUT.card || '').slice(-4);
document.getElementById('r-total').textContent = money(CHECKOUT.price * CHECKOUT.qty);
document.getElementById('place').addEventListener('click', () => {
  let h = 0; for (const c of JSON.stringify(CHECKOUT)) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  location.href = '/tasks/placed.html?order=NW-' + (100000 + h % 900000);
});""")
page("placed.html", "Order placed", """<h1>Order placed</h1>
<p>Thank you, <span id="who"></span>. Your order number is <strong id="num"></strong>.</p>
<p>We sent a confirmation to your email. You can <a href="/tasks/orders.html">track your orders</a> at any time.</p>""",
     script=ck_common + """
document.getElementById('num').textContent = new URLSearchParams(location.search).get('order');
document.getElementById('who').textContent = CHECKOUT.fullname || 'customer';
sessionStorage.removeItem('checkout');""")

# ---- 7. feed ----
TOPICS = ["small kitchens", "north-facing rooms", "rental-friendly upgrades", "reading nooks", "balcony gardens",
          "entryway storage", "home offices", "kids' rooms", "layered lighting", "open shelving"]
stories = [{"n": i, "title": f"{R.randint(3, 12)} ideas for {R.choice(TOPICS)}", "by": f"{R.choice(FIRST)} {R.choice(LAST)}",
            "mins": R.randint(2, 14)} for i in range(1, 201)]
with open("data/stories.js", "w") as f:
    f.write("// The stories of feed.html and story.html (made by gen.py).\nconst STORIES = " + json.dumps(stories) + ";\n")
page("feed.html", "Inspiration feed", """<h1>Inspiration feed</h1>
<p>Fresh ideas from our stylists and customers. New stories load as you scroll.</p>
<ol id="feed" style="list-style:none;padding:0"></ol>
<p role="status" id="feed-status"></p>
<button type="button" id="more">Load more stories</button>
<section style="min-height:700px"><h2>Popular this week</h2><ol>""" + "".join(f'<li><a href="/tasks/story.html?n={s["n"]}">{E(s["title"])}, by {E(s["by"])}</a></li>' for s in stories[100:110]) + """</ol>
<h2>Follow our stylists</h2><p>New stories every morning: rooms from our customers, with the pieces that made them.</p></section>""",
     side=help_side(), head='<script src="/tasks/data/stories.js"></script><style>html{overflow-anchor:none}</style>', script="""
const feed = document.getElementById('feed');
let shown = 0;
function loadMore() {
  const next = STORIES.slice(shown, shown + 20);
  feed.insertAdjacentHTML('beforeend', next.map((s) =>
    '<li class="card" style="margin:.6rem 0;min-height:110px"><h2><a href="/tasks/story.html?n=' + s.n + '">Story ' + s.n + ': ' + s.title + '</a></h2>' +
    '<p class="muted">By ' + s.by + ' &middot; ' + s.mins + ' minute read</p><p>Photos, a shopping list and the measurements that made it work.</p></li>').join(''));
  shown += next.length;
  document.getElementById('feed-status').textContent = 'Showing ' + shown + ' stories';
  if (shown >= STORIES.length) document.getElementById('more').hidden = true;
}
loadMore();
document.getElementById('more').addEventListener('click', loadMore);
// Reaching the footer loads the next stories; a click on the button, which
// scrolls it into view, does not reach it (the section after it is taller
// than the window), so either way one batch loads at a time. Scroll
// anchoring is off so that the new stories push the footer out of view
// rather than the page scrolling along to keep it there.
new IntersectionObserver((entries) => { if (entries.some((e) => e.isIntersecting)) loadMore(); })
  .observe(document.querySelector('footer.site'));""")
page("story.html", "Story", """<p class="crumbs"><a href="/tasks/feed.html">Inspiration feed</a></p><h1 id="title">Story</h1><p id="by" class="muted"></p>
<p>Start with what you have, then add one piece at a time. Measure twice, and leave room to walk.</p>""",
     side=help_side(), head='<script src="/tasks/data/stories.js"></script>', script="""
const s = STORIES.find((x) => x.n === Number(new URLSearchParams(location.search).get('n')));
document.getElementById('title').textContent = s ? 'Story ' + s.n + ': ' + s.title : 'Story not found';
if (s) document.getElementById('by').textContent = 'By ' + s.by + ', ' + s.mins + ' minute read';""")

# ---- 9. shop listing ----
CATS = ["Lighting", "Furniture", "Kitchen", "Textiles", "Garden", "Storage"]
NOUNS = {"Lighting": ["floor lamp", "desk lamp", "pendant", "sconce", "lantern", "string lights"],
         "Furniture": ["side table", "armchair", "bookcase", "bench", "dresser", "stool"],
         "Kitchen": ["dutch oven", "knife block", "mixing bowls", "kettle", "pour-over set", "spice rack"],
         "Textiles": ["throw blanket", "cushion cover", "rug", "duvet set", "curtains", "table runner"],
         "Garden": ["planter", "watering can", "bird feeder", "hose reel", "garden kneeler", "trellis"],
         "Storage": ["basket", "shoe rack", "wall hooks", "crate", "drawer organizer", "coat stand"]}
BRANDS = ["Fjord", "Hearth & Co", "Loom", "Marlow", "Oakline", "Pavia", "Quill", "Sable", "Tamsin", "Umber"]
COLORS = ["#c44536", "#197278", "#283d3b", "#edddd4", "#772e25", "#e9c46a", "#2a9d8f", "#264653"]
products = []
names = set()
for cat in CATS:
    k = 0
    while k < 25:
        n = f"{R.choice(ADJ)} {R.choice(NOUNS[cat])}"
        if n in names:
            continue
        names.add(n)
        products.append({"name": n, "cat": cat, "brand": R.choice(BRANDS), "price": round(R.uniform(9, 650), 2),
                         "rating": round(R.uniform(3, 5), 1), "color": R.choice(COLORS)})
        k += 1
R.shuffle(products)
SHOP_TARGET = next(p for p in products if p["cat"] == "Lighting")


def svg(color):
    s = f"<svg xmlns='http://www.w3.org/2000/svg' width='160' height='110'><rect width='160' height='110' fill='#f1f1f1'/><circle cx='80' cy='55' r='34' fill='{color}'/></svg>"
    return "data:image/svg+xml," + urllib.parse.quote(s)


cards = "".join(
    f"""<li class="card" data-cat="{p['cat']}" data-brand="{E(p['brand'])}"><img src="{svg(p['color'])}" alt="{E(p['name'])}" width="160" height="110">
<h3><a href="/tasks/product.html?id={i % 40 + 1}">{E(p['name'])}</a></h3><p class="muted">{E(p['brand'])} &middot; {p['cat']} &middot; rated {p['rating']}</p>
<p><strong>${p['price']:.2f}</strong></p><button type="button" aria-label="Add {E(p['name'])} to cart">Add to cart</button></li>"""
    for i, p in enumerate(products))
filters = ("<h2>Filters</h2><fieldset><legend>Category</legend>" +
           "".join(f'<div><input type="checkbox" id="cat-{c}" value="{c}" class="cat"> <label for="cat-{c}">{c}</label></div>' for c in CATS) +
           "</fieldset><fieldset><legend>Brand</legend>" +
           "".join(f'<div><input type="checkbox" id="brand-{i}" value="{E(b)}" class="brand"> <label for="brand-{i}">{E(b)}</label></div>' for i, b in enumerate(BRANDS)) +
           "</fieldset><fieldset><legend>Price</legend>" +
           "".join(f'<div><input type="radio" name="price" id="price-{i}"{" checked" if i == 0 else ""}> <label for="price-{i}">{l}</label></div>' for i, l in enumerate(["Any price", "Under $50", "$50 to $150", "$150 to $400", "Over $400"])) +
           '</fieldset><button type="button" id="clear">Clear filters</button>')
page("shop.html", "Shop all", f"""<p class="crumbs"><a href="/tasks/index.html">Home</a> / Shop all</p>
<h1>Shop all</h1>
<div class="field"><label for="sort">Sort by</label><select id="sort"><option>Featured</option><option>Price: low to high</option><option>Price: high to low</option><option>Customer rating</option></select>
<span role="status" id="count">Showing 150 products</span></div>
<ul class="grid" id="products" style="list-style:none;padding:0">{cards}</ul>
<nav aria-label="Listing pages"><span>Page 1 of 1</span></nav>""",
     side=filters, cart="Cart (0)", script="""
let inCart = 0;
function apply() {
  const cats = [...document.querySelectorAll('.cat:checked')].map((c) => c.value);
  const brands = [...document.querySelectorAll('.brand:checked')].map((c) => c.value);
  let n = 0;
  for (const li of document.querySelectorAll('#products > li')) {
    const show = (!cats.length || cats.includes(li.dataset.cat)) && (!brands.length || brands.includes(li.dataset.brand));
    li.hidden = !show;
    if (show) n++;
  }
  document.getElementById('count').textContent = 'Showing ' + n + ' products';
}
for (const c of document.querySelectorAll('.cat, .brand')) c.addEventListener('change', apply);
document.getElementById('clear').addEventListener('click', () => { for (const c of document.querySelectorAll('.cat, .brand')) c.checked = false; apply(); });
document.getElementById('products').addEventListener('click', (e) => {
  if (!e.target.matches('button')) return;
  inCart++;
  document.getElementById('cart-link').textContent = 'Cart (' + inCart + ')';
  e.target.textContent = 'Added';
});
const pre = new URLSearchParams(location.search).get('c');
if (pre) { const box = document.getElementById('cat-' + pre); if (box) { box.checked = true; apply(); } }""")

# ---- 10. autocomplete (help center) ----
ARTICLES = ["Return a damaged item", "Return an item bought in store", "Returns without a receipt", "Refund timelines",
            "Track your delivery", "Change your delivery address", "Delivery to a PO box", "Reschedule a delivery",
            "Reset your password", "Change your email address", "Close your account", "Gift card balance",
            "Pay in installments", "Payment declined", "Assembly instructions", "Book an assembly service",
            "Care for wooden furniture", "Care for linen", "Product safety notices", "Price match policy",
            "Warranty claims", "Replacement parts", "Order a fabric sample", "Cancel an order", "Edit an order",
            "Business account invoices", "Tax exemption", "Store opening hours", "Click and collect", "Recycle old furniture"]
slug = lambda t: t.lower().replace(" ", "-")
with open("data/help-articles.json", "w") as f:
    json.dump([{"id": slug(t), "title": t} for t in ARTICLES], f, indent=0)
page("help.html", "Help center", """<h1>Help center</h1>
<div class="field" style="position:relative"><label for="hq">Search help articles</label>
<input id="hq" type="text" role="combobox" aria-autocomplete="list" aria-expanded="false" aria-controls="hq-list" autocomplete="off">
<ul id="hq-list" role="listbox" aria-label="Suggested articles" hidden style="position:absolute;background:#fff;border:1px solid #ccc;list-style:none;padding:.2rem;margin:0;z-index:2"></ul></div>
<h2>Popular topics</h2><ul>""" + "".join(f'<li><a href="/tasks/help-article.html?id={slug(t)}">Read: {E(t)}</a></li>' for t in ARTICLES[4:16]) + """</ul>
<h2 id="returns">Returns</h2><p>Most items can be returned within 90 days.</p><h2 id="delivery">Delivery</h2><p>Standard delivery takes 3 to 5 working days.</p>""",
     side=help_side(), script="""
const hq = document.getElementById('hq'), list = document.getElementById('hq-list');
let timer;
hq.addEventListener('input', () => {
  clearTimeout(timer);
  timer = setTimeout(async () => {
    const q = hq.value.trim().toLowerCase();
    const all = await (await fetch('/tasks/data/help-articles.json')).json();
    const hits = q ? all.filter((a) => a.title.toLowerCase().includes(q)).slice(0, 8) : [];
    list.innerHTML = hits.map((a) => '<li role="option" data-id="' + a.id + '">' + a.title + '</li>').join('');
    list.hidden = !hits.length;
    hq.setAttribute('aria-expanded', String(hits.length > 0));
  }, 300);
});
list.addEventListener('click', (e) => {
  const o = e.target.closest('[role=option]');
  if (o) location.href = '/tasks/help-article.html?id=' + o.dataset.id;
});""")
page("help-article.html", "Help article", """<p class="crumbs"><a href="/tasks/help.html">Help center</a></p><h1 id="title">Article</h1>
<p>If this did not answer your question, contact us: we answer within a day.</p>""",
     side=help_side(), script="""
fetch('/tasks/data/help-articles.json').then((r) => r.json()).then((all) => {
  const a = all.find((x) => x.id === new URLSearchParams(location.search).get('id'));
  document.getElementById('title').textContent = a ? a.title : 'Article not found';
});""")

# ---- 11. modal dialog (files) ----
FILES = ["Q3 report.pdf", "Board minutes.docx", "Catalog draft.indd", "Store 14 floor plan.dwg", "Supplier list.xlsx",
         "Brand guidelines.pdf", "Photo shoot schedule.xlsx", "Holiday campaign brief.docx", "Price list 2026.xlsx",
         "Returns analysis.pptx", "Warehouse inventory.csv", "Team offsite agenda.docx"]
frows = "".join(f'<tr data-name="{E(n)}"><td>{E(n)}</td><td>{R.randint(12, 9000)} KB</td><td>{R.choice(FIRST)} {R.choice(LAST)}</td>'
                f'<td><a href="/tasks/files.html#{i}" aria-label="Open {E(n)}">Open</a> <button type="button" class="del" aria-label="Delete {E(n)}">Delete</button></td></tr>'
                for i, n in enumerate(FILES))
page("files.html", "Shared files", f"""<h1>Shared files</h1>
<p>Files shared with the Merchandising team.</p>
<table><caption>12 files</caption><thead><tr><th>Name</th><th>Size</th><th>Owner</th><th>Actions</th></tr></thead><tbody id="files">{frows}</tbody></table>
<div id="backdrop" hidden style="position:fixed;inset:0;background:rgba(0,0,0,.4)">
<div role="dialog" aria-modal="true" aria-labelledby="dlg-title" aria-describedby="dlg-desc" style="background:#fff;max-width:24rem;margin:20vh auto;padding:1rem;border-radius:6px">
<h2 id="dlg-title">Delete file?</h2><p id="dlg-desc">This cannot be undone.</p>
<button type="button" id="dlg-cancel">Cancel</button> <button type="button" id="dlg-ok">Delete</button></div></div>
<div id="toast" role="status" class="toast" hidden></div>""",
     side=help_side(), script="""
const backdrop = document.getElementById('backdrop');
let row = null, opener = null;
document.getElementById('files').addEventListener('click', (e) => {
  if (!e.target.matches('.del')) return;
  opener = e.target; row = e.target.closest('tr');
  document.getElementById('dlg-title').textContent = 'Delete ' + row.dataset.name + '?';
  backdrop.hidden = false; document.getElementById('dlg-cancel').focus();
});
function close() { backdrop.hidden = true; if (opener && opener.isConnected) opener.focus(); }
document.getElementById('dlg-cancel').addEventListener('click', close);
document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && !backdrop.hidden) close(); });
document.getElementById('dlg-ok').addEventListener('click', () => {
  const name = row.dataset.name;
  row.remove(); close();
  const t = document.getElementById('toast');
  t.textContent = 'Item deleted: ' + name; t.hidden = false;
});""")

# ---- 12. settings tabs ----
TABS = ["Profile", "Notifications", "Privacy", "Billing"]
panels = {
    "Profile": '<div class="field"><label for="pname">Display name</label><input id="pname" value="Ada Lovelace"></div><div class="field"><label for="pbio">Bio</label><textarea id="pbio">Analyst.</textarea></div>',
    "Notifications": "".join(f'<div class="field"><input type="checkbox" id="n{i}"{" checked" if i % 2 == 0 else ""}> <label for="n{i}">{E(l)}</label></div>' for i, l in enumerate(
        ["Email me when an order ships", "Email me about price drops on saved items", "Text me delivery updates",
         "Send me the weekly newsletter", "Notify me about back-in-stock items", "Remind me about items left in my cart"])),
    "Privacy": '<div class="field"><input type="checkbox" id="pv1" checked> <label for="pv1">Personalized recommendations</label></div><div class="field"><input type="checkbox" id="pv2"> <label for="pv2">Share my reviews publicly</label></div>',
    "Billing": '<p>Visa ending 4242, expires 08/29.</p><div class="field"><label for="bemail">Invoice email</label><input id="bemail" value="ada@example.com"></div>',
}
tablist = "".join(f'<button type="button" role="tab" id="tab-{t}" aria-controls="panel-{t}" aria-selected="{"true" if i == 0 else "false"}" tabindex="{0 if i == 0 else -1}">{t}</button>' for i, t in enumerate(TABS))
tabpanels = "".join(f'<section role="tabpanel" id="panel-{t}" aria-labelledby="tab-{t}"{"" if i == 0 else " hidden"}><h2>{t} settings</h2>{panels[t]}'
                    f'<button type="button" class="save">Save {t.lower()} settings</button><p role="status" class="saved"></p></section>' for i, t in enumerate(TABS))
page("settings.html", "Settings", f"""<p class="crumbs"><a href="/tasks/dashboard.html">Account</a> / Settings</p><h1>Settings</h1>
<div role="tablist" aria-label="Settings sections">{tablist}</div>{tabpanels}
<h2>Frequently asked</h2>
<details><summary>Why do I get emails I turned off?</summary><p>Changes can take up to 24 hours.</p></details>
<details><summary>How do I delete my account?</summary><p>Contact customer service.</p></details>""",
     side=help_side(), script="""
const tabs = [...document.querySelectorAll('[role=tab]')];
function select(tab) {
  for (const t of tabs) {
    const on = t === tab;
    t.setAttribute('aria-selected', String(on)); t.tabIndex = on ? 0 : -1;
    document.getElementById(t.getAttribute('aria-controls')).hidden = !on;
  }
}
for (const t of tabs) t.addEventListener('click', () => select(t));
for (const b of document.querySelectorAll('.save')) b.addEventListener('click', () => {
  b.nextElementSibling.textContent = 'Saved. Your changes apply from now on.';
});""")

# ---- 13. paginated blog ----
posts = [{"n": i, "title": f"{R.choice(['A guide to', 'Notes on', 'Living with', 'Ten rules for', 'The case for'])} {R.choice(TOPICS)} #{i}"} for i in range(1, 81)]
page("blog.html", "Blog", """<h1>The Northwind blog</h1><p role="status" id="which"></p><ol id="posts"></ol>
<nav aria-label="Pagination" id="pages"></nav>""",
     side=help_side(), script="const POSTS = " + json.dumps(posts) + """;
const pg = Math.max(1, Math.min(8, Number(new URLSearchParams(location.search).get('page')) || 1));
document.getElementById('which').textContent = 'Page ' + pg + ' of 8';
document.getElementById('posts').innerHTML = POSTS.slice((pg - 1) * 10, pg * 10).map((p) =>
  '<li><h2><a href="/tasks/post.html?n=' + p.n + '">' + p.title + '</a></h2><p class="muted">A short read about ' + p.title.toLowerCase() + '.</p></li>').join('');
let nav = pg > 1 ? '<a href="/tasks/blog.html?page=' + (pg - 1) + '">Previous page</a> ' : '';
for (let i = 1; i <= 8; i++) nav += i === pg ? '<span aria-current="page">' + i + '</span> ' : '<a href="/tasks/blog.html?page=' + i + '" aria-label="Page ' + i + '">' + i + '</a> ';
if (pg < 8) nav += '<a href="/tasks/blog.html?page=' + (pg + 1) + '">Next page</a>';
document.getElementById('pages').innerHTML = nav;""")
page("post.html", "Post", """<p class="crumbs"><a href="/tasks/blog.html">Blog</a></p><h1 id="title">Post</h1><p>Written by the Northwind editors.</p>""",
     side=help_side(), script="const POSTS = " + json.dumps(posts) + """;
const p = POSTS.find((x) => x.n === Number(new URLSearchParams(location.search).get('n')));
document.getElementById('title').textContent = p ? p.title : 'Post not found';""")

# ---- index ----
page("index.html", "Home", """<h1>Northwind Home</h1><p>Furniture, lighting and everything in between.</p>
<ul>""" + "".join(f'<li><a href="/tasks/{h}">{E(t)}</a></li>' for t, h in [("Shop all", "shop.html"), ("Search", "search.html"), ("Orders", "orders.html"),
                                                                          ("Help center", "help.html"), ("Blog", "blog.html"), ("Inspiration feed", "feed.html"),
                                                                          ("Developer docs", "docs/ledger.html")]) + "</ul>")


# ---- 8. documentation pages (rustdoc-like) ----
BASE = ["new", "with_capacity", "capacity", "reserve", "reserve_exact", "try_reserve", "shrink_to_fit", "shrink_to",
        "into_boxed_slice", "truncate", "as_slice", "as_mut_slice", "as_ptr", "as_mut_ptr", "set_len", "swap_remove",
        "insert", "remove", "retain", "retain_mut", "dedup_by_key", "dedup_by", "dedup", "push", "pop", "pop_if",
        "append", "drain", "clear", "len", "is_empty", "split_off", "resize_with", "leak", "spare_capacity_mut",
        "resize", "extend_from_slice", "extend_from_within", "splice", "extract_if", "first", "last", "get", "get_mut",
        "first_mut", "last_mut", "split_first", "split_last", "swap", "reverse", "iter", "iter_mut", "windows",
        "chunks", "chunks_exact", "rchunks", "chunk_by", "split_at", "split_at_mut", "split", "splitn", "rsplit",
        "contains", "starts_with", "ends_with", "strip_prefix", "strip_suffix", "binary_search", "binary_search_by",
        "binary_search_by_key", "sort_unstable", "sort_unstable_by", "sort_unstable_by_key", "select_nth_unstable",
        "rotate_left", "rotate_right", "fill", "fill_with", "clone_from_slice", "copy_from_slice", "copy_within",
        "swap_with_slice", "partition_point", "sort", "sort_by", "sort_by_key", "sort_by_cached_key", "to_vec",
        "repeat", "concat", "join", "balance_at", "entries_between", "entry_for", "post", "post_all", "reconcile",
        "reconcile_with", "void_entry", "audit_trail", "audit_since", "snapshot", "restore", "freeze", "thaw",
        "is_frozen", "total", "total_by", "running_total", "closing_balance", "opening_balance", "merge", "merge_by",
        "export_csv", "import_csv", "period", "periods", "by_account", "accounts", "rename_account", "close_period"]
METHODS = []
for m in BASE:
    METHODS.append(m)
for m in BASE[:60]:
    METHODS.append(m + "_unchecked" if not m.startswith("try_") else m + "_in")
METHODS = list(dict.fromkeys(METHODS))
TRAITS = ["Clone", "Debug", "Default", "Deref", "DerefMut", "Drop", "Eq", "Extend<T>", "Extend<&'a T>", "From<&[T]>",
          "From<&mut [T]>", "From<[T; N]>", "From<Box<[T]>>", "From<Vec<T>>", "FromIterator<T>", "Hash", "Index<I>",
          "IndexMut<I>", "IntoIterator", "Ord", "PartialEq<Ledger<U>>", "PartialEq<[U]>", "PartialEq<&[U]>",
          "PartialOrd", "TryFrom<Ledger<T>>", "Write", "AsRef<[T]>", "AsMut<[T]>", "Borrow<[T]>", "BorrowMut<[T]>",
          "Serialize", "Deserialize<'de>", "Display", "Send", "Sync", "Unpin", "UnwindSafe", "RefUnwindSafe",
          "Any", "CloneToUninit", "Into<U>", "TryInto<U>", "ToOwned", "Borrow<T>", "BorrowMut<T>", "From<T>"]
MODULES = ["alloc", "any", "arch", "array", "ascii", "backtrace", "borrow", "boxed", "cell", "char", "clone", "cmp",
           "collections", "convert", "default", "env", "error", "f32", "f64", "ffi", "fmt", "fs", "future", "hash",
           "hint", "io", "iter", "ledger", "marker", "mem", "net", "num", "ops", "option", "os", "panic", "path",
           "pin", "prelude", "primitive", "process", "ptr", "rc", "result", "slice", "str", "string", "sync", "task",
           "thread", "time", "vec", "money", "period", "account", "audit", "export", "import", "currency", "calendar"]
TYPES = ["Option", "Result", "Entry", "Iter", "IterMut", "Drain", "Splice", "Period", "Account", "Money", "Ordering",
         "Range", "Box", "String", "Vec"]
DOCS_CSS = """body{margin:0;font:16px/1.5 "Source Serif 4",Georgia,serif;display:flex;background:#fff;color:#000}
nav.sidebar{width:250px;flex:none;background:#f5f5f5;height:100vh;position:sticky;top:0;overflow-y:auto;font:14px/1.6 system-ui,sans-serif;padding:.5rem}
nav.sidebar ul{list-style:none;padding-left:.5rem;margin:0}main{padding:1rem 2rem;max-width:960px;min-width:0}
pre{background:#f5f5f5;padding:.7rem;overflow-x:auto;font:14px/1.4 "Source Code Pro",monospace}.kw{color:#8959a8}.string{color:#718c00}
.comment{color:#8e908c}.fn{color:#ad7c37}.struct{color:#ad448e}h4.code-header{font:600 15px "Source Code Pro",monospace;margin:.8rem 0 .2rem}
.search{width:100%;padding:.4rem;margin:.5rem 0}.docblock{margin-left:1.5rem}a.anchor{margin-left:-1rem;color:#999;text-decoration:none}"""


def code_line():
    var = R.choice(["ledger", "entries", "books", "l", "acc"])
    return R.choice([
        f'<span class="kw">let</span> <span class="kw">mut</span> {var} = <span class="struct">Ledger</span>::new();',
        f'{var}.push(<span class="struct">Entry</span>::debit(<span class="string">"rent"</span>, <span class="struct">Money</span>::usd({R.randint(1, 9000)})));',
        f'<span class="macro">assert_eq!</span>({var}.len(), {R.randint(0, 9)});',
        f'<span class="comment">// {R.choice(["entries are kept in posting order", "nothing is posted twice", "the period closes at midnight UTC"])}</span>',
        f'<span class="kw">let</span> total = {var}.iter().map(|e| e.amount()).sum::&lt;<span class="struct">Money</span>&gt;();',
        f'<span class="macro">assert!</span>({var}.is_empty() || {var}.first().is_some());',
    ])


def method_section(m):
    ret = R.choice(["", " -&gt; <span class=\"struct\">usize</span>", " -&gt; <span class=\"struct\">bool</span>",
                    " -&gt; <span class=\"struct\">Option</span>&lt;&amp;T&gt;", " -&gt; <span class=\"struct\">Ledger</span>&lt;T&gt;"])
    arg = R.choice(["&amp;self", "&amp;mut self", "&amp;mut self, index: <span class=\"struct\">usize</span>", "&amp;self, f: F",
                    "&amp;mut self, other: &amp;mut <span class=\"struct\">Ledger</span>&lt;T&gt;"])
    ty = R.sample(TYPES, 2)
    words = m.replace("_", " ")
    body = (f'<p>{R.choice(["Returns", "Computes", "Moves", "Checks", "Reorders", "Collects"])} the entries of the ledger for <code>{m}</code>: '
            f'{words} works on the entries in posting order and never reorders what it does not touch. '
            f'See <a href="#method.{R.choice(BASE)}"><code>{R.choice(["Ledger::len", "Ledger::iter", "Ledger::post"])}</code></a> and '
            f'<a href="/tasks/docs/ledger.html#{ty[0].lower()}"><code>{ty[0]}</code></a> for the related {ty[1].lower()} handling.</p>')
    if R.random() < 0.4:
        body += f'<h5 id="panics-{m}">Panics</h5><p>Panics if the index is out of bounds or the ledger is frozen (see <code>freeze</code>).</p>'
    if R.random() < 0.3:
        body += f'<h5 id="complexity-{m}">Time complexity</h5><p>Takes <em>O</em>({R.choice(["1", "n", "n log n", "n + m"])}) time.</p>'
    ex = "\n".join(code_line() for _ in range(R.randint(4, 9)))
    body += f'<h5 id="examples-{m}">Examples</h5><pre class="rust"><code><span class="kw">use</span> northwind_std::ledger::{{<span class="struct">Ledger</span>, <span class="struct">Entry</span>, <span class="struct">Money</span>}};\n\n{ex}</code></pre>'
    return (f'<section id="method.{m}" class="method"><a href="#method.{m}" class="anchor" aria-label="Anchor for {m}">§</a>'
            f'<h4 class="code-header">pub fn <span class="fn">{m}</span>({arg}){ret}</h4><div class="docblock">{body}</div></section>')


RETAIN_MUT = ('<section id="method.retain_mut" class="method"><a href="#method.retain_mut" class="anchor" aria-label="Anchor for retain_mut">§</a>'
              '<h4 class="code-header">pub fn <span class="fn">retain_mut</span>&lt;F&gt;(&amp;mut self, f: F) -&gt; <span class="struct">RetainGuard</span>&lt;\'_, T&gt; '
              'where F: FnMut(&amp;mut T) -&gt; bool</h4><div class="docblock">'
              '<p>Retains only the entries specified by the predicate, passing a mutable reference to it.</p>'
              '<p>In other words, remove all entries <code>e</code> such that <code>f(&amp;mut e)</code> returns <code>false</code>. '
              'The entries removed are kept aside by the returned <a href="/tasks/docs/retainguard.html">RetainGuard</a> until it is dropped, '
              'so a reconciliation can still read them.</p><h5 id="examples-retain_mut">Examples</h5><pre class="rust"><code>'
              '<span class="kw">let</span> <span class="kw">mut</span> l = <span class="struct">Ledger</span>::from([1, 2, 3, 4]);\n'
              'l.retain_mut(|x| <span class="kw">if</span> *x &lt;= 3 { *x += 1; true } <span class="kw">else</span> { false });\n'
              '<span class="macro">assert_eq!</span>(l, [2, 3, 4]);</code></pre></div></section>')


def trait_section(t):
    inner = "".join(f'<section class="method"><h4 class="code-header">fn <span class="fn">{R.choice(["clone", "fmt", "eq", "cmp", "hash", "from", "extend", "index", "deref", "into_iter", "partial_cmp", "as_ref"])}</span>(&amp;self) -&gt; Self</h4>'
                    f'<div class="docblock"><p>{R.choice(["Performs the conversion.", "Returns a copy of the value.", "Formats the value using the given formatter.", "Tests for equality.", "Feeds this value into the given Hasher."])} '
                    f'<a href="/tasks/docs/ledger.html#impl-{E(t)}">Read more</a></p></div></section>' for _ in range(R.randint(1, 4)))
    return f'<details class="implementors-toggle" open><summary><section id="impl-{E(t)}"><h3 class="code-header">impl&lt;T&gt; {E(t)} for <span class="struct">Ledger</span>&lt;T&gt;</h3></section></summary>{inner}</details>'


def docs_page(name, title, short, sidebar_methods, sections, intro):
    side = (f'<nav class="sidebar" aria-label="Sidebar"><h2><a href="/tasks/docs/ledger.html">northwind_std 1.84.0</a></h2>'
            f'<h2>{E(short)}</h2><h3><a href="#implementations">Methods</a></h3><ul>'
            + "".join(f'<li><a href="#method.{m}">{m}</a></li>' for m in sidebar_methods)
            + '</ul><h3><a href="#trait-implementations">Trait Implementations</a></h3><ul>'
            + "".join(f'<li><a href="#impl-{E(t)}">{E(t)}</a></li>' for t in TRAITS)
            + '</ul><h2>In crate northwind_std</h2><h3>Modules</h3><ul>'
            + "".join(f'<li><a href="/tasks/docs/ledger.html#mod-{m}">{m}</a></li>' for m in MODULES) + "</ul></nav>")
    doc = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{E(title)} - Rust</title><style>{DOCS_CSS}</style></head>
<body>{side}<main>
<form role="search" onsubmit="return false"><input class="search" aria-label="Search docs" placeholder="Type S or / to search, ? for more options"></form>
<div class="crumbs"><a href="/tasks/docs/ledger.html">northwind_std</a>::<a href="/tasks/docs/ledger.html">ledger</a></div>
<h1>{title}</h1>
<p><a href="/tasks/docs/ledger.html#source">Source</a> &middot; 1.0.0</p>
{intro}
<h2 id="implementations">Implementations</h2>
{sections}
</main></body></html>
"""
    with open(name, "w") as f:
        f.write(doc)


intro = ('<pre class="rust item-decl"><code>pub struct Ledger&lt;T, A = Global&gt;\nwhere\n    A: Allocator,\n{ /* private fields */ }</code></pre>'
         '<div class="docblock"><p>A growable, append-only book of entries, written as <code>Ledger&lt;T&gt;</code>.</p>'
         + "".join(f'<h2 id="{h.lower().replace(" ", "-")}">{h}</h2><p>{"The ledger keeps its entries in posting order. " * 4}</p><pre class="rust"><code>'
                   + "\n".join(code_line() for _ in range(6)) + "</code></pre>" for h in ["Examples", "Indexing", "Slicing", "Capacity and reallocation", "Guarantees"])
         + "</div>")
secs = "<details open><summary><h3 class=\"code-header\">impl&lt;T&gt; Ledger&lt;T&gt;</h3></summary>" + "".join(
    RETAIN_MUT if m == "retain_mut" else method_section(m) for m in METHODS) + "</details>"
secs += '<h2 id="trait-implementations">Trait Implementations</h2>' + "".join(trait_section(t) for t in TRAITS)
docs_page("docs/ledger.html", "Struct northwind_std::ledger::Ledger", "Ledger", METHODS, secs, intro)
guard_methods = ["kept", "removed", "len", "is_empty", "restore", "commit", "iter", "into_removed"]
docs_page("docs/retainguard.html", "Struct northwind_std::ledger::RetainGuard", "RetainGuard", guard_methods,
          "".join(method_section(m) for m in guard_methods) + '<h2 id="trait-implementations">Trait Implementations</h2>' + "".join(trait_section(t) for t in TRAITS[:12]),
          '<pre class="rust item-decl"><code>pub struct RetainGuard&lt;\'a, T&gt; { /* private fields */ }</code></pre>'
          '<div class="docblock"><p>The entries <a href="/tasks/docs/ledger.html#method.retain_mut">Ledger::retain_mut</a> removed, kept until the guard is dropped.</p></div>')

print("search target:", TARGET["name"], "| shop target:", SHOP_TARGET["name"],
      "| lighting:", sum(p["cat"] == "Lighting" for p in products))
