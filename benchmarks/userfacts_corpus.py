"""The per-user fact corpus (``corpus/userfacts*.jsonl``): written here, one person at a time.

Sixteen people, each one scope (``user_id``) of 20 memories: 8 about the person (3 semantic,
2 episodic, 1 procedural, 2 emotional) and 12 everyday episodic events ("filler"). Every
person has 10 questions answered by one memory (the 8 person memories and 2 of the events)
and 4 *no-match probes*: questions about that person on a topic none of their memories holds
("What is Marta's blood type?"), whose right answer is nothing.

A question shares no content word with its answer: after stop words (the store's full-text
list and Lucene's) and Porter stemming, the only word a question and its memory may have in
common is the scope's subject, the person's name or "user" — the word every memory of the
scope shares. It must be answered by meaning ("What is Marta's trade?" for "Marta works as a
carpenter"). ``--check`` fails on any question that breaks this (naming the words).

Phrasings. Every memory and question is written twice from one template: with the person's
name ("Marta works as ...", "What is Marta's trade?") and in mem0's style ("The user works as
...", "What is the user's trade?"), so the two phrasings compare on the same facts. A
procedural memory is a state machine and reads the same in both.

Split. People alternate in the order listed below: the 1st, 3rd, ... are ``dev``, the 2nd,
4th, ... ``heldout`` (8 each; every file line carries its ``split``). Rules are tuned on dev
only; held-out is reported, never tuned on.

    python benchmarks/userfacts_corpus.py          # (re)write the two files
    python benchmarks/userfacts_corpus.py --check  # files up to date, no question leaks a word
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import snowballstemmer
from _retrieval import BM25_STOP_WORDS

from memorywire.core.content import content_to_storage, embed_text
from memorywire.core.textsearch import STOP_WORDS
from memorywire.wire.models import MemoryType

HERE = Path(__file__).resolve().parent
MEMORIES = HERE / "corpus" / "userfacts.jsonl"
QUESTIONS = HERE / "corpus" / "userfacts_questions.jsonl"
PHRASINGS = ("name", "user")
#: The store's full-text stop list and Lucene's (the BM25 baseline's).
STOPS = STOP_WORDS | BM25_STOP_WORDS
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_PERSON_TYPES = ("semantic", "semantic", "semantic", "episodic", "episodic", "procedural",
                 "emotional", "emotional")


def proc(name: str, states: list[str], triggers: list[str]) -> dict[str, Any]:
    """A straight-line procedure: ``states`` in order, one trigger per step."""
    if len(triggers) != len(states) - 1:
        raise ValueError(f"{name}: one trigger per step")
    return {"name": name, "initial": states[0], "states": states,
            "transitions": [{"trigger": t, "source": a, "dest": b}
                            for t, a, b in zip(triggers, states[:-1], states[1:], strict=True)]}


@dataclass(frozen=True)
class Person:
    key: str
    name: str
    poss: str  # "her" / "his" in the name phrasing ("their" in mem0's)
    obj: str  # "her" / "him"
    #: 8 (template or procedure, question): the types of ``_PERSON_TYPES``, in order.
    about: list[tuple[str | dict[str, Any], str]]
    filler: list[str]  # 12 everyday events (episodic)
    filler_questions: dict[int, str]  # memory number (9-20) -> question
    probes: list[str]  # 4 questions about this person that nothing answers


PEOPLE: list[Person] = [
    Person("marta", "Marta", "her", "her", [
        ("{S} works as a carpenter, building kitchen cabinets for a small workshop in Porto.",
         "What is {p} trade?"),
        ("{S} is allergic to shellfish and avoids prawns and mussels.",
         "Which seafood makes {s} ill?"),
        ("{P} younger brother Rui teaches chemistry at a secondary school.",
         "Who is {p} sibling and what does he do for a living?"),
        ("Last Saturday {s} ran the Porto half marathon in under two hours.",
         "How did {p} long-distance race go at the weekend?"),
        ("In March {s} flew to Montreal for a cousin's wedding.",
         "Why did {s} travel to Canada in the spring?"),
        (proc("oil_finish", ["sanding", "staining", "drying", "waxing"],
              ["apply_stain", "let_dry", "buff_wax"]),
         "How does {s} treat a freshly made wooden piece before handing it over?"),
        ("{S} felt proud when a client cried with joy at a dining table from the workshop.",
         "What made {s} feel good about {their} job recently?"),
        ("{S} gets nervous before speaking at the neighbourhood association meetings.",
         "What situation gives {s} stage fright?"),
    ], [
        "{S} bought a new kettle at the hardware store on Monday.",
        "{S} watered the balcony tomatoes on Tuesday evening.",
        "{S} picked up dry cleaning on Wednesday.",
        "{S} had grilled sardines for dinner on Thursday.",
        "{S} repaired a squeaky door hinge at home on Friday morning.",
        "{S} watched a documentary about octopuses on Sunday night.",
        "{S} renewed {p} library card last week.",
        "{S} took the tram to the dentist for a cleaning.",
        "{S} called {p} grandmother to wish her a happy birthday.",
        "{S} paid the electricity bill online.",
        "{S} baked a lemon cake for a coworker's farewell.",
        "{S} cleaned out the garage and donated old clothes.",
    ], {12: "What fish did {s} eat midweek?",
        16: "How did {s} get to the tooth appointment?"},
        ["What is {p} blood type?", "Which political party does {s} vote for?",
         "What brand of phone does {s} use?", "How tall is {s}?"]),
    Person("kofi", "Kofi", "his", "him", [
        ("{S} is a night-shift nurse on the cardiology ward at a hospital in Leeds.",
         "What is {p} occupation?"),
        ("{S} is lactose intolerant and takes oat milk in {p} coffee.",
         "Which dairy products must {s} avoid?"),
        ("{S} supports Arsenal and has held a season ticket for ten years.",
         "Which football club does {s} follow?"),
        ("{S} passed the advanced life support exam on 14 February.",
         "Which certification test did {s} get through in winter?"),
        ("Two weeks ago {s} moved into a flat in Headingley with a garden.",
         "Where did {s} relocate recently?"),
        (proc("jollof_rice", ["fry_onions", "add_tomato_paste", "simmer_stock", "steam_rice"],
              ["stir_in_paste", "pour_stock", "cover_pot"]),
         "How does {s} cook {their} favourite West African dish?"),
        ("{S} was heartbroken when {p} grandfather passed away in Kumasi.",
         "What loss left {s} grieving?"),
        ("{S} feels calm and content while fishing at the reservoir on days off.",
         "What activity relaxes {s}?"),
    ], [
        "{S} ironed shirts on Sunday afternoon.",
        "{S} ordered a pizza after a long shift on Friday.",
        "{S} replaced the batteries in the smoke alarm.",
        "{S} met a friend for a pint at the local pub on Thursday.",
        "{S} bought a bus pass for the month.",
        "{S} fixed a puncture on {p} bicycle.",
        "{S} booked an eye test at the optician.",
        "{S} sorted the recycling before collection day.",
        "{S} streamed a cricket match on Saturday.",
        "{S} sent a parcel to {p} sister in Accra.",
        "{S} vacuumed the living room and hallway.",
        "{S} tried a new ramen place near the station.",
    ], {14: "What went wrong with {p} bike tyre?",
        18: "What did {s} post to a relative in Ghana?"},
        ["What is {p} shoe size?", "Does {s} speak French?", "What car does {s} drive?",
         "Which star sign is {s}?"]),
    Person("ingrid", "Ingrid", "her", "her", [
        ("{S} is a marine biologist studying cod populations in the North Sea.",
         "What does {s} do for a living?"),
        ("{S} is vegan and has not eaten meat, eggs or cheese since 2016.",
         "What kind of diet does {s} follow?"),
        ("{S} lives in Bergen in a wooden house near the harbour.",
         "In which Norwegian city is {p} home?"),
        ("{S} capsized a kayak during a storm in August and was rescued by the coast guard.",
         "What boating accident happened to {s} in late summer?"),
        ("{S} presented a paper on fish migration at a conference in Reykjavik last autumn.",
         "Where did {s} give a scientific talk?"),
        (proc("dive_preparation", ["check_tanks", "test_regulator", "buddy_check", "descend"],
              ["test", "pair_up", "submerge"]),
         "What routine does {s} follow before going underwater?"),
        ("{S} was furious when the research grant renewal was rejected.",
         "What funding news made {s} angry?"),
        ("{S} feels lonely during the long dark winters.",
         "What season makes {s} sad and isolated?"),
    ], [
        "{S} defrosted the freezer on Sunday.",
        "{S} walked to the fish market and bought mackerel.",
        "{S} changed the wiper blades on the car.",
        "{S} knitted a scarf while listening to a podcast.",
        "{S} went to a yoga class on Wednesday evening.",
        "{S} hung new curtains in the bedroom.",
        "{S} returned a jacket that was too small.",
        "{S} had coffee with a colleague on Monday.",
        "{S} filed {p} tax return online.",
        "{S} took {p} nephew to the aquarium.",
        "{S} made cinnamon buns on Saturday.",
        "{S} cleared snow from the driveway.",
    ], {15: "What clothing did {s} take back to the shop because it did not fit?",
        18: "Which family member did {s} bring to see sea creatures?"},
        ["What is {p} favourite colour?", "How many children does {s} have?",
         "Which university did {s} attend?", "What is {p} phone number?"]),
    Person("tomasz", "Tomasz", "his", "him", [
        ("{S} writes backend software in Go for a logistics company.",
         "What is {p} profession?"),
        ("{S} has two cats named Pierogi and Bigos.",
         "What pets does {s} keep?"),
        ("{S} speaks Polish, English and some Japanese.",
         "Which languages can {s} talk in?"),
        ("{S} broke {p} wrist snowboarding in the Tatra mountains in January.",
         "What injury did {s} suffer on a winter trip?"),
        ("{S} proposed to {p} girlfriend Ola on a night train to Vienna.",
         "How did {s} get engaged?"),
        (proc("code_review", ["read_diff", "run_tests", "comment", "approve"],
              ["execute_suite", "annotate", "sign_off"]),
         "What steps does {s} take when checking a colleague's changes?"),
        ("{S} was anxious for weeks before the team's production launch.",
         "What made {s} worried at work?"),
        ("{S} feels nostalgic when hearing songs from {p} childhood in Gdansk.",
         "What music brings back memories for {s}?"),
    ], [
        "{S} assembled a bookshelf on Saturday afternoon.",
        "{S} bought a sack of potatoes at the market.",
        "{S} updated the router firmware at home.",
        "{S} jogged along the river on Tuesday.",
        "{S} cooked a pot of mushroom soup.",
        "{S} lost {p} umbrella on the tram.",
        "{S} renewed {p} passport at the city office.",
        "{S} played chess online until midnight.",
        "{S} mopped the kitchen floor.",
        "{S} bought tickets for a jazz concert.",
        "{S} took the car for an oil change.",
        "{S} wrote a birthday card for {p} mother.",
    ], {14: "What did {s} leave behind on public transport?",
        18: "What live music event is {s} going to?"},
        ["What is {p} blood type?", "Does {s} own a motorbike?",
         "What is {p} favourite film?", "Where did {s} go to high school?"]),
    Person("priya", "Priya", "her", "her", [
        ("{S} is a chartered accountant who audits hospitals and charities.",
         "What kind of work does {s} do?"),
        ("{S} is diabetic and checks {p} blood sugar before every meal.",
         "What chronic illness does {s} manage?"),
        ("{S} grew up in Chennai and moved to Toronto at nineteen.",
         "Where is {s} originally from?"),
        ("{S} completed a ten-day silent meditation retreat in October.",
         "What did {s} do in the autumn that involved not speaking?"),
        ("{S} adopted a three-legged beagle named Biscuit in June.",
         "What new companion joined {p} household in early summer?"),
        (proc("month_end_close", ["reconcile_accounts", "accrue_expenses", "review_variances",
                                  "publish_report"],
              ["accrue", "analyse", "publish"]),
         "How does {s} wrap up the books each period?"),
        ("{S} felt betrayed when {p} best friend skipped {p} wedding.",
         "What hurt {p} feelings about {their} marriage ceremony?"),
        ("{S} is thrilled about becoming an aunt next spring.",
         "What family news is {s} excited about?"),
    ], [
        "{S} picked up groceries on the way home on Monday.",
        "{S} made dal and rice for dinner on Tuesday.",
        "{S} walked Biscuit around the park in the rain.",
        "{S} changed the bedsheets on Sunday.",
        "{S} attended a pottery class on Wednesday night.",
        "{S} paid a parking fine online.",
        "{S} watched a Bollywood film with {p} roommate.",
        "{S} bought winter boots at a sale.",
        "{S} dropped off a donation at the food bank.",
        "{S} scheduled a haircut for Friday.",
        "{S} took the subway to a hockey game.",
        "{S} repotted a fiddle leaf fig.",
    ], {13: "What craft did {s} practise midweek?",
        16: "What footwear did {s} get at a discount?"},
        ["What is {p} favourite ice cream flavour?", "Does {s} have a driving licence?",
         "Which gym does {s} go to?", "How old is {p} father?"]),
    Person("diego", "Diego", "his", "him", [
        ("{S} is a sous-chef at a seafood restaurant in Valencia.",
         "What job does {s} hold?"),
        ("{S} is colour-blind and cannot tell red from green.",
         "What vision problem does {s} have?"),
        ("{S} plays the trumpet in a brass band on Sundays.",
         "Which instrument does {s} perform on?"),
        ("{S} won second place in a paella competition in July.",
         "How did {s} do in the rice dish contest?"),
        ("{S} cut {p} thumb badly while filleting a tuna last month and needed stitches.",
         "How did {s} injure {their} hand?"),
        (proc("sourdough_bake", ["feed_starter", "mix_dough", "proof_overnight", "bake"],
              ["knead", "rest", "fire_oven"]),
         "How does {s} make bread?"),
        ("{S} gets stressed and short-tempered during the Saturday dinner rush.",
         "When does {s} lose patience on the job?"),
        ("{S} felt overjoyed when {p} daughter Lucia took her first steps.",
         "Which moment with {their} child made {s} very happy?"),
    ], [
        "{S} bought fresh bread and tomatoes at the bakery.",
        "{S} washed the car on Monday morning.",
        "{S} took {p} daughter to the paediatrician for a check-up.",
        "{S} fixed a leaking tap in the bathroom.",
        "{S} went to the beach with friends on {p} day off.",
        "{S} ordered new knives online.",
        "{S} listened to a football match on the radio.",
        "{S} ironed {p} chef whites for the week.",
        "{S} visited {p} parents in Alicante.",
        "{S} bought a birthday present for {p} wife.",
        "{S} trimmed the hedge in the front yard.",
        "{S} renewed the car insurance.",
    ], {12: "What plumbing job did {s} handle?",
        17: "Who did {s} go to see in another town?"},
        ["Which political party does {s} support?", "What is {p} favourite novel?",
         "How tall is {s}?", "What is {p} shoe size?"]),
    Person("hana", "Hana", "her", "her", [
        ("{S} teaches maths and art to eight-year-olds at a primary school in Brno.",
         "What is {p} profession?"),
        ("{S} suffers from a fear of heights.",
         "Which phobia does {s} have?"),
        ("{S} is married to Pavel, a firefighter.",
         "Who is {p} husband and what does he do?"),
        ("{S} cycled from Prague to Vienna for charity in May.",
         "What long bike ride did {s} do to raise money?"),
        ("{S} slipped on ice outside the school and bruised {p} hip in December.",
         "How did {s} get hurt during the winter?"),
        (proc("morning_class", ["take_register", "warm_up_song", "lesson", "snack_break"],
              ["sing", "teach", "eat"]),
         "How does {s} begin a day with {their} pupils?"),
        ("{S} felt deeply moved when a former pupil sent {obj} a thank-you letter.",
         "What touched {s} emotionally recently?"),
        ("{S} is frustrated with the endless paperwork from the school inspectors.",
         "What annoys {s} about {their} job?"),
    ], [
        "{S} bought a bag of apples at the farmers' market.",
        "{S} baked plum dumplings on Sunday.",
        "{S} went swimming at the public pool on Thursday.",
        "{S} took the dog for a vet check-up.",
        "{S} repainted the garden fence.",
        "{S} picked up a parcel from the post office.",
        "{S} watched an opera at the National Theatre.",
        "{S} cleaned the windows of the flat.",
        "{S} had lunch with {p} sister on Saturday.",
        "{S} marked spelling tests until late at night.",
        "{S} bought new running shoes.",
        "{S} planted tulip bulbs in the garden.",
    ], {15: "Which musical performance did {s} attend?",
        20: "What flowers did {s} put in the ground?"},
        ["What is {p} favourite football team?", "Which car does {s} drive?",
         "What is {p} blood type?", "Does {s} play any video games?"]),
    Person("olu", "Olu", "his", "him", [
        ("{S} drives a double-decker bus on route 38 in London.",
         "What does {s} do for a living?"),
        ("{S} is allergic to cat fur.",
         "Which animal makes {s} sneeze?"),
        ("{S} is studying for a law degree part-time through the Open University.",
         "What qualification is {s} working towards?"),
        ("{S} was robbed of {p} wallet on the night bus in April.",
         "What was stolen from {s} during a late shift?"),
        ("{S} ran into {p} old headteacher at a wedding last weekend.",
         "Whom did {s} unexpectedly meet at a marriage celebration?"),
        (proc("bus_shift_start", ["walk_around_check", "adjust_mirrors",
                                  "log_in_ticket_machine", "depart_depot"],
              ["adjust", "log_in", "pull_out"]),
         "What does {s} do before leaving the garage with a vehicle?"),
        ("{S} felt humiliated when a passenger shouted at {obj} in front of everyone.",
         "What embarrassing moment upset {s} at work?"),
        ("{S} is hopeful about passing {p} exams this summer.",
         "How is {s} feeling about {their} upcoming tests?"),
    ], [
        "{S} bought a loaf and eggs from the corner shop.",
        "{S} played dominoes with neighbours on Friday night.",
        "{S} cooked jollof for {p} flatmates.",
        "{S} washed {p} uniform on Sunday.",
        "{S} topped up {p} Oyster card.",
        "{S} watched a boxing match at a friend's house.",
        "{S} went to the barber for a trim.",
        "{S} fixed the wobbly kitchen table.",
        "{S} attended church with {p} mother.",
        "{S} paid the gas bill.",
        "{S} bought a second-hand laptop.",
        "{S} took a nap after a double shift.",
    ], {10: "Which board game did {s} enjoy with the people next door?",
        19: "What computer did {s} purchase?"},
        ["What is {p} favourite dessert?", "Which country did {s} visit last summer?",
         "Does {s} have tattoos?", "What is {p} daughter's name?"]),
    Person("sofia", "Sofia", "her", "her", [
        ("{S} works as a veterinary surgeon at an animal clinic in Bologna.",
         "What is {p} career?"),
        ("{S} is gluten intolerant and cannot eat pasta made from wheat.",
         "What dietary restriction does {s} live with?"),
        ("{S} owns a vintage red Vespa from 1978.",
         "What does {s} ride around town?"),
        ("{S} delivered twin calves at a farm during a thunderstorm in May.",
         "What difficult birth did {s} assist with in bad weather?"),
        ("{S} completed {p} first triathlon at Lake Garda last September.",
         "Which endurance race did {s} finish?"),
        (proc("vaccination_visit", ["weigh_pet", "examine", "inject_vaccine",
                                    "update_record"],
              ["check", "vaccinate", "log"]),
         "How does {s} handle a routine jab appointment for a dog?"),
        ("{S} cried for days after putting down a horse under {p} care for years.",
         "What loss at work left {s} in tears?"),
        ("{S} is worried about {p} mother's failing memory.",
         "What family concern troubles {s}?"),
    ], [
        "{S} bought parmesan and basil at the market.",
        "{S} had the boiler serviced on Tuesday.",
        "{S} went to a cooking class on risotto.",
        "{S} watched a film at an open-air cinema.",
        "{S} cleaned the kitchen on Sunday morning.",
        "{S} bought a gift for {p} godson.",
        "{S} walked to work in the rain on Monday.",
        "{S} called the bank about a card payment.",
        "{S} swam laps at the municipal pool.",
        "{S} sorted old photos into albums.",
        "{S} had dinner at a trattoria with colleagues.",
        "{S} replaced a broken lamp in the hallway.",
    ], {11: "What rice dish did {s} get lessons in?",
        18: "How did {s} organise {their} pictures?"},
        ["What is {p} favourite band?", "Which city was {s} born in?",
         "Does {s} have a boyfriend?", "What laptop does {s} use?"]),
    Person("arjun", "Arjun", "his", "him", [
        ("{S} is a pharmacist who runs a late-night chemist in Leicester.",
         "What is {p} line of work?"),
        ("{S} is a lifelong vegetarian and has never eaten meat.",
         "What is {p} diet like?"),
        ("{S} collects vintage fountain pens and owns over sixty of them.",
         "What items does {s} hoard as a hobby?"),
        ("{S} completed a charity skydive over Salisbury Plain in June.",
         "What daring jump did {s} make for a good cause?"),
        ("{S} became a father when {p} son Dev was born in March.",
         "When did {s} have a baby boy?"),
        (proc("prescription_check", ["verify_identity", "check_interactions",
                                     "count_tablets", "counsel_patient"],
              ["screen", "dispense", "advise"]),
         "What does {s} do before handing over medicine?"),
        ("{S} felt guilty about missing {p} father's seventieth birthday.",
         "Which family occasion does {s} regret skipping?"),
        ("{S} gets irritated by customers who are rude to {p} staff.",
         "What behaviour from shoppers annoys {s}?"),
    ], [
        "{S} bought nappies and baby wipes on Monday.",
        "{S} changed the oil in {p} car.",
        "{S} watched a cricket test match on television.",
        "{S} cooked dal makhani for guests.",
        "{S} repaired a dripping shower head.",
        "{S} took {p} mother to a temple festival.",
        "{S} cleaned out the fridge on Thursday.",
        "{S} bought a new ink bottle for {p} pens.",
        "{S} went for a run in Abbey Park.",
        "{S} posted a birthday card to {p} cousin.",
        "{S} booked a table at an Italian restaurant.",
        "{S} assembled a cot for the nursery.",
    ], {13: "What bathroom fixture did {s} mend?",
        19: "Where did {s} reserve dinner?"},
        ["What is {p} favourite sport to play?", "Which language did {s} learn at school?",
         "How much does {s} earn?", "What colour is {p} car?"]),
    Person("lena", "Lena", "her", "her", [
        ("{S} is an architect who designs timber apartment buildings in Hamburg.",
         "What does {s} do professionally?"),
        ("{S} is deaf in {p} left ear since a childhood infection.",
         "What hearing problem does {s} have?"),
        ("{S} rows with a women's eight on the Alster twice a week.",
         "Which water sport does {s} practise?"),
        ("{S} won a design award for a kindergarten project in November.",
         "What prize did {s} receive recently?"),
        ("{S} got locked out of {p} flat and had to call a locksmith on Tuesday.",
         "Why did {s} need help getting into {their} home?"),
        (proc("site_visit", ["put_on_helmet", "inspect_beams", "photograph_defects",
                             "file_notes"],
              ["inspect", "photograph", "write_up"]),
         "How does {s} go about checking a building under construction?"),
        ("{S} felt devastated when {p} grandmother's farmhouse burned down.",
         "What family tragedy crushed {s}?"),
        ("{S} is delighted with the new bicycle lanes on {p} commute.",
         "What change to {their} ride to the office pleases {s}?"),
    ], [
        "{S} bought fish rolls at the harbour on Saturday.",
        "{S} took {p} nephew to the zoo.",
        "{S} hung a new mirror in the hall.",
        "{S} had brunch with {p} book club.",
        "{S} fixed the chain on {p} bicycle.",
        "{S} watched a crime series on Sunday evening.",
        "{S} picked up a prescription from the pharmacy.",
        "{S} bought a winter coat on sale.",
        "{S} did the laundry on Wednesday.",
        "{S} visited an exhibition on Bauhaus furniture.",
        "{S} returned library books that were overdue.",
        "{S} ordered a standing desk for {p} office.",
    ], {18: "Which art show did {s} go to?",
        19: "What did {s} bring back late?"},
        ["What is {p} favourite holiday destination?", "Does {s} smoke?",
         "Which mobile provider does {s} use?", "What is {p} mother's name?"]),
    Person("mateo", "Mateo", "his", "him", [
        ("{S} grows Malbec grapes on a family vineyard near Mendoza.",
         "How does {s} earn {their} income?"),
        ("{S} is allergic to bee stings and keeps an antihistamine kit in the truck.",
         "Which insect is dangerous to {s}?"),
        ("{S} has three daughters and a grandson.",
         "How big is {p} family?"),
        ("Hail destroyed a third of {p} harvest in February.",
         "What storm damage hit {p} crop this year?"),
        ("{S} travelled to Bordeaux in 2023 to learn about oak barrel ageing.",
         "Why did {s} go to France?"),
        (proc("grape_harvest", ["test_sugar", "hand_pick", "sort_bunches", "crush"],
              ["pick", "sort", "press"]),
         "What does {s} do when the vines are ready each autumn?"),
        ("{S} felt anxious waiting for the rain during last year's drought.",
         "What weather worry kept {s} up at night?"),
        ("{S} is proud that {p} wine won a silver medal.",
         "What achievement makes {s} happy about {their} bottles?"),
    ], [
        "{S} repaired a fence post on the north field.",
        "{S} bought diesel for the tractor.",
        "{S} had asado with neighbours on Sunday.",
        "{S} took the truck to the mechanic.",
        "{S} played cards at the village club.",
        "{S} cleaned the irrigation filters.",
        "{S} went to mass with {p} wife.",
        "{S} bought new work gloves.",
        "{S} watched a polo match on television.",
        "{S} drove {p} grandson to school on Monday.",
        "{S} sharpened the pruning shears.",
        "{S} paid the workers on Friday.",
    ], {11: "What barbecue did {s} share with the people living nearby?",
        19: "Which garden tool did {s} hone?"},
        ["What is {p} favourite book?", "Does {s} speak English?",
         "What is {p} blood pressure?", "Which football team does {s} support?"]),
    Person("yuki", "Yuki", "her", "her", [
        ("{S} translates Japanese manga into English for a publisher.",
         "What is {p} occupation?"),
        ("{S} suffers from migraines triggered by bright light.",
         "What causes {p} headaches?"),
        ("{S} lives with {p} partner Ken and a shiba inu named Mochi.",
         "Who shares {p} home?"),
        ("{S} finished translating a 600-page novel two days before the deadline in September.",
         "Which big book project did {s} complete in early autumn?"),
        ("{S} lost {p} passport at Narita airport in July and missed a flight.",
         "What travel mishap happened to {s} in summer?"),
        (proc("tea_ceremony", ["purify_utensils", "whisk_matcha", "serve_guest", "clean_bowl"],
              ["whisk", "serve", "rinse"]),
         "How does {s} prepare the traditional drink for visitors?"),
        ("{S} felt ashamed after snapping at Ken over dirty dishes.",
         "What argument does {s} regret?"),
        ("{S} finds peace walking in the bamboo forest near Arashiyama.",
         "Where does {s} go to calm down?"),
    ], [
        "{S} bought rice and miso at the supermarket.",
        "{S} walked Mochi along the river.",
        "{S} sorted the burnable and plastic rubbish.",
        "{S} had ramen with a friend on Friday.",
        "{S} did karaoke with colleagues.",
        "{S} watered the bonsai on the balcony.",
        "{S} paid the monthly rent.",
        "{S} fixed a tear in {p} favourite jacket.",
        "{S} went to the onsen on Sunday.",
        "{S} bought a new pair of headphones.",
        "{S} cleaned the rice cooker.",
        "{S} read a mystery novel on the train.",
    ], {13: "What singing outing did {s} have with coworkers?",
        17: "Where did {s} soak in hot springs?"},
        ["What is {p} favourite colour?", "Does {s} own a car?", "How old is {s}?",
         "Which school did {s} attend?"]),
    Person("sean", "Sean", "his", "him", [
        ("{S} is an electrician who rewires old houses in Cork.",
         "What trade is {s} in?"),
        ("{S} has asthma and carries an inhaler everywhere.",
         "What breathing condition does {s} have?"),
        ("{S} coaches an under-12 hurling team on Saturdays.",
         "Which kids' sport does {s} train?"),
        ("{S} got an electric shock from a faulty socket in March but was unhurt.",
         "What accident at work nearly hurt {s}?"),
        ("{S} and {p} wife renewed their vows in Galway in August.",
         "What anniversary ceremony did {s} have by the sea?"),
        (proc("fuse_board_swap", ["isolate_supply", "test_dead", "replace_board", "certify"],
              ["prove_dead", "fit_board", "sign_cert"]),
         "How does {s} safely change a consumer unit?"),
        ("{S} was gutted when {p} team lost the county final.",
         "What sporting defeat upset {s}?"),
        ("{S} feels grateful for {p} neighbours who helped after the flood.",
         "Who is {s} thankful to and why?"),
    ], [
        "{S} bought a sliced pan and milk at the shop.",
        "{S} watched a rugby match in the pub.",
        "{S} cleaned the gutters on Saturday.",
        "{S} drove {p} son to a dentist appointment.",
        "{S} picked up timber from the builders' merchant.",
        "{S} cooked a stew on Sunday.",
        "{S} replaced the van's tyres.",
        "{S} went to a traditional music session.",
        "{S} paid the TV licence.",
        "{S} mowed the lawn.",
        "{S} brought the dog for a walk on the beach.",
        "{S} ordered a new drill online.",
    ], {15: "What did {s} get fitted on {their} work vehicle?",
        18: "What garden chore did {s} do?"},
        ["What is {p} favourite whiskey?", "What is {p} middle name?", "Does {s} play golf?",
         "What is {p} salary?"]),
    Person("amara", "Amara", "her", "her", [
        ("{S} is a journalist covering politics for a newspaper in Nairobi.",
         "What does {s} do for a living?"),
        ("{S} is allergic to penicillin.",
         "Which antibiotic must doctors avoid giving {s}?"),
        ("{S} runs a book club that meets every second Thursday.",
         "What reading group does {s} lead?"),
        ("{S} interviewed the finance minister on live radio in January.",
         "Which government official did {s} question on air?"),
        ("{S} was tear-gassed while reporting on a protest in July.",
         "What happened to {s} while covering a demonstration?"),
        (proc("story_filing", ["verify_sources", "draft", "fact_check", "send_to_editor"],
              ["write", "confirm", "submit"]),
         "What is {p} process before an article goes to print?"),
        ("{S} felt scared after receiving threatening messages about an investigation.",
         "What made {s} fear for {their} safety?"),
        ("{S} is overjoyed that {p} younger sister got into medical school.",
         "What sibling news delighted {s}?"),
    ], [
        "{S} bought mangoes at the market on Saturday.",
        "{S} took a matatu to the office.",
        "{S} charged {p} laptop and camera batteries.",
        "{S} had chai with {p} aunt.",
        "{S} did yoga at home in the morning.",
        "{S} watched a football match with friends.",
        "{S} paid the water bill.",
        "{S} got {p} braids redone at the salon.",
        "{S} cooked pilau for a family lunch.",
        "{S} cleaned {p} apartment on Sunday.",
        "{S} renewed {p} press card.",
        "{S} bought a plant for {p} desk.",
    ], {10: "How did {s} commute to work?",
        16: "What did {s} have done to {their} hair?"},
        ["What is {p} favourite singer?", "Does {s} have any pets?",
         "Which car does {s} own?", "What is {p} religion?"]),
    Person("pieter", "Pieter", "his", "him", [
        ("{S} runs a bakery in Utrecht and starts work at four in the morning.",
         "What kind of shop does {s} own?"),
        ("{S} has high blood pressure and takes medication daily.",
         "What heart-related health issue does {s} have?"),
        ("{S} speaks fluent Spanish after ten years in Seville.",
         "Which foreign language does {s} know well?"),
        ("{S} won the city's best apple pie contest in September.",
         "Which baking competition did {s} win?"),
        ("{S} cycled around the IJsselmeer with {p} son over Easter.",
         "What trip did {s} take by bike with {their} child?"),
        (proc("croissant_lamination", ["chill_dough", "roll_butter_in", "fold_three_times",
                                       "shape"],
              ["roll", "fold", "cut"]),
         "How does {s} make flaky pastries?"),
        ("{S} was exhausted and burnt out during the holiday rush in December.",
         "When does {s} feel worn down?"),
        ("{S} is thankful to {p} loyal regular customers.",
         "Who does {s} feel grateful to?"),
    ], [
        "{S} bought flour and yeast from the wholesaler.",
        "{S} serviced the dough mixer on Monday.",
        "{S} walked the dog along the canal.",
        "{S} ate herring from a street stall.",
        "{S} cleaned the shop windows.",
        "{S} watched a speed skating race on television.",
        "{S} fixed the bakery's front door bell.",
        "{S} paid {p} staff on Friday.",
        "{S} visited {p} granddaughter in Rotterdam.",
        "{S} bought new oven gloves.",
        "{S} read the newspaper in a cafe.",
        "{S} took a short nap in the afternoon.",
    ], {12: "What fish did {s} eat outdoors?",
        17: "Which relative did {s} see in another city?"},
        ["What is {p} favourite holiday?", "Does {s} play any instrument?",
         "What car does {s} drive?", "What is {p} wife's name?"]),
]


def _words(person: Person, phrasing: str) -> dict[str, str]:
    if phrasing == "name":
        return {"S": person.name, "s": person.name, "P": f"{person.name}'s",
                "p": f"{person.name}'s", "their": person.poss, "obj": person.obj}
    return {"S": "The user", "s": "the user", "P": "The user's", "p": "the user's",
            "their": "their", "obj": "them"}


def _render(template: str, person: Person, phrasing: str) -> str:
    return template.format(**_words(person, phrasing))


def split_of(index: int) -> str:
    """People alternate in list order: even positions are dev, odd ones held out."""
    return "dev" if index % 2 == 0 else "heldout"


def build() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every memory line and every question line, both phrasings."""
    memories: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    for index, person in enumerate(PEOPLE):
        if len(person.about) != 8 or len(person.filler) != 12 or len(person.probes) != 4:
            raise ValueError(f"{person.key}: 8 person memories, 12 events and 4 probes")
        split = split_of(index)
        for phrasing in PHRASINGS:
            base = {"user": person.key, "split": split, "phrasing": phrasing}
            for n, ((content, question), mtype) in enumerate(
                    zip(person.about, _PERSON_TYPES, strict=True), start=1):
                mid = f"{person.key}-{n:02d}"
                text = content if isinstance(content, dict) else _render(content, person,
                                                                          phrasing)
                memories.append({"id": mid, **base, "type": mtype, "about": "person",
                                 "content": text})
                questions.append({"id": f"{person.key}-q{n:02d}", **base, "kind": "meaning",
                                  "type": mtype, "about": "person",
                                  "query": _render(question, person, phrasing),
                                  "relevant": [mid]})
            for n, event in enumerate(person.filler, start=9):
                mid = f"{person.key}-{n:02d}"
                memories.append({"id": mid, **base, "type": "episodic", "about": "filler",
                                 "content": _render(event, person, phrasing)})
                if n in person.filler_questions:
                    questions.append({
                        "id": f"{person.key}-q{n:02d}", **base, "kind": "meaning",
                        "type": "episodic", "about": "filler",
                        "query": _render(person.filler_questions[n], person, phrasing),
                        "relevant": [mid]})
            for n, probe in enumerate(person.probes, start=1):
                questions.append({"id": f"{person.key}-x{n}", **base, "kind": "no_match",
                                  "type": None, "about": None,
                                  "query": _render(probe, person, phrasing), "relevant": []})
    return memories, questions


def searchable_text(memory: dict[str, Any]) -> str:
    """What the store embeds and indexes for a memory (a procedure reads as its words)."""
    mtype = MemoryType(memory["type"])
    return embed_text(mtype, content_to_storage(mtype, memory["content"]))


_STEMMER = snowballstemmer.stemmer("porter")


def content_stems(text: str, subject: frozenset[str]) -> set[str]:
    """Porter stems of ``text``'s words, stop words and the scope's subject words left out."""
    words = [w for w in _WORD.findall(text.lower()) if w not in STOPS and w not in subject]
    return set(_STEMMER.stemWords(words))


def _subject(user: str) -> frozenset[str]:
    person = next(p for p in PEOPLE if p.key == user)
    return frozenset({person.name.lower(), "user"})


def leaks(memories: list[dict[str, Any]],
          questions: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], set[str]]]:
    """Each answerable question that shares a content stem with a gold memory, and the stems."""
    text = {(m["phrasing"], m["id"]): searchable_text(m) for m in memories}
    for q in questions:
        subject = _subject(q["user"])
        asked = content_stems(q["query"], subject)
        shared = set().union(*(asked & content_stems(text[(q["phrasing"], g)], subject)
                               for g in q["relevant"]))
        if shared:
            yield q, shared


def _lines(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def stats(memories: list[dict[str, Any]], questions: list[dict[str, Any]]) -> dict[str, Any]:
    one = [m for m in memories if m["phrasing"] == "name"]
    asked = [q for q in questions if q["phrasing"] == "name"]
    by_type: dict[str, int] = {}
    for q in asked:
        if q["kind"] == "meaning":
            by_type[q["type"]] = by_type.get(q["type"], 0) + 1
    return {"people": len(PEOPLE), "facts": len(one), "phrasings": len(PHRASINGS),
            "memory_lines": len(memories),
            "meaning_questions": sum(q["kind"] == "meaning" for q in asked),
            "no_match_probes": sum(q["kind"] == "no_match" for q in asked),
            "question_lines": len(questions), "meaning_by_type": by_type,
            "dev_people": sum(split_of(i) == "dev" for i in range(len(PEOPLE)))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="fail if the files differ from this script or a question leaks")
    args = parser.parse_args(argv)
    memories, questions = build()
    bad = list(leaks(memories, questions))
    for q, shared in bad:
        print(f"leak {q['id']} ({q['phrasing']}): {q['query']!r} shares {sorted(shared)}",
              file=sys.stderr)
    wanted = {MEMORIES: _lines(memories), QUESTIONS: _lines(questions)}
    if args.check:
        stale = [p.name for p, body in wanted.items()
                 if not p.exists() or p.read_text(encoding="utf-8") != body]
        for name in stale:
            print(f"{name} is not what {Path(__file__).name} writes; run it", file=sys.stderr)
        print(json.dumps(stats(memories, questions)))
        return 1 if bad or stale else 0
    if bad:
        return 1
    for path, body in wanted.items():
        path.write_text(body, encoding="utf-8")
    print(json.dumps(stats(memories, questions)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
