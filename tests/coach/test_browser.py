"""serve: a whole game played by clicking through the page in a real headless Chromium.

Needs the ``selenium`` package and a system Chromium with its driver (Debian/Ubuntu packages
``chromium`` and ``chromium-driver``); without them the test is skipped and says which is missing.
"""

import shutil

import pytest

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install selenium)")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from yahtzee_lightning.coach.game import verdict  # noqa: E402


def _browser():
    chromium = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        missing = " and ".join(n for n, p in (("chromium", chromium), ("chromedriver", driver)) if p is None)
        pytest.skip(f"no headless browser: {missing} not found (apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    return webdriver.Chrome(service=webdriver.ChromeService(executable_path=driver), options=options)


@pytest.fixture
def browser():
    b = _browser()
    yield b
    b.quit()


def _lines(b):
    """The verdicts shown, newest first (read in one script: the page redraws the list whole)."""
    return b.execute_script("return [...document.querySelectorAll('#lines li')].map((li) => li.textContent)")


def _click_and_wait(b, element):
    """Click, then wait for the server's answer (the page is idle again and the verdicts grew)."""
    n = len(_lines(b))
    element.click()
    WebDriverWait(b, 30).until(lambda d: len(_lines(d)) > n and d.execute_script("return !document.body.dataset.busy"))
    assert b.find_element(By.ID, "error").text == ""
    return _lines(b)[: len(_lines(b)) - n]  # the newest first


@pytest.mark.slow("a headless browser plays a game through the served page: about 10 s")
def test_a_whole_game_through_the_page(server, browser):
    b = browser
    b.get(server.url + "?seed=2")
    WebDriverWait(b, 30).until(lambda d: d.find_element(By.ID, "status").text.startswith("Turn 1 of 5"))
    b.find_element(By.ID, "hint").click()
    ranking = b.find_elements(By.CSS_SELECTOR, "#advice tbody tr")
    assert ranking and ranking[0].is_displayed() and ranking[0].text.split()[-1] == "0.00"

    turn = 0
    while b.find_element(By.TAG_NAME, "body").get_attribute("data-over") != "1":
        for _ in range(1 + turn % 2):  # hold the two lowest dice and roll: once or twice
            dice = b.find_elements(By.CSS_SELECTOR, "#dice .die")
            held = [dice[0].text, dice[1].text]
            dice[0].click()
            dice[1].click()
            assert "held" in dice[1].get_attribute("class")
            new = _click_and_wait(b, b.find_element(By.ID, "roll"))
            assert new[0].startswith(f"you: keep {held[0]} {held[1]} (dice ")
        # Score the first open box: after one roll that is one decision, scoring early (the roll left
        # unused), judged against the best choice at that roll; after two, the usual last choice.
        row = b.find_element(By.CSS_SELECTOR, "#card tr.legal")
        box = row.get_attribute("data-box")
        new = _click_and_wait(b, row.find_element(By.CSS_SELECTOR, "td.mine"))
        when = " after roll 2" if turn % 2 == 0 else ""
        assert new[-1].startswith(f"you: score {box}{when} (dice "), new  # newest first: the agent's turn above
        assert [line.split(":")[0] for line in new] == ["greedy"] * 3 + ["you"]  # the agent's whole turn
        turn += 1
        if turn == 2:  # a reload goes on with the same game, its verdicts as they were
            before = _lines(b)
            b.refresh()
            WebDriverWait(b, 30).until(lambda d: d.find_element(By.ID, "status").text.startswith("Turn 3 of 5"))
            assert _lines(b) == before and len(server.games) == 1

    assert turn == 5
    (game,) = server.games.values()
    assert game.over
    status = b.find_element(By.ID, "status").text
    assert status == f"Game over: you {game.total}, greedy {game.agent_total}"
    summary = [li.text for li in b.find_elements(By.CSS_SELECTOR, "#summary li")]
    assert f"your total regret: {game.you.regret:.2f} expected points lost" in summary
    assert sum(line.startswith("you: ") for line in _lines(b)) == len(game.you.log) == 2 * 3 + 3 * 2  # keeps + boxes
    assert _lines(b) == [verdict(d) for d in reversed(game.history)]  # every verdict, newest first
