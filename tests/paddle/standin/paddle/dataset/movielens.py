"""movielens (MovieLens 1M ratings) with the real data's sizes: 6040 users, 3952 movies, 21
jobs, 7 age groups, 18 categories, a title dict of 5174 words. train() and test() yield
[user id, gender (0 male), age index, job, movie id, [category ids], [title word ids],
[rating]], the rating on the real reader's scale (stars * 2 - 5, so -3 .. 5): 65536 train,
1024 test. The signal: a movie's categories are all even or all odd (its id's parity); a
user of gender 0 likes the even movies, of gender 1 the odd ones, and rates a liked movie 3
or 5, the others -3 or -1."""
import numpy as np

age_table = [1, 18, 25, 35, 45, 50, 56]
_USERS = 6040
_MOVIES = 3952
_JOBS = 20
_CATEGORIES = 18
_TITLE_WORDS = 5174


def max_user_id():
    return _USERS


def max_movie_id():
    return _MOVIES


def max_job_id():
    return _JOBS


def movie_categories():
    return {"category%d" % i: i for i in range(_CATEGORIES)}


def get_movie_title_dict():
    return {"word%d" % i: i for i in range(_TITLE_WORDS)}


def _movie(movie_id):
    """A movie's categories (1-3, of its id's parity) and title (1-6 words), fixed per id."""
    rng = np.random.RandomState(movie_id)
    parity = range(movie_id % 2, _CATEGORIES, 2)
    categories = [int(c) for c in rng.choice(parity, size=int(rng.randint(1, 4)), replace=False)]
    title = [int(w) for w in rng.randint(0, _TITLE_WORDS, size=int(rng.randint(1, 7)))]
    return categories, title


def _user(user_id):
    rng = np.random.RandomState(100000 + user_id)
    return [user_id, int(rng.randint(2)), int(rng.randint(len(age_table))), int(rng.randint(_JOBS + 1))]


def _reader(count, seed):
    def reader():
        rng = np.random.RandomState(seed)
        for _ in range(count):
            user_id, movie_id = int(rng.randint(1, _USERS + 1)), int(rng.randint(1, _MOVIES + 1))
            categories, title = _movie(movie_id)
            user = _user(user_id)
            liked = user[1] == movie_id % 2
            rating = float(rng.choice([3.0, 5.0]) if liked else rng.choice([-3.0, -1.0]))
            yield user + [movie_id, categories, title, [rating]]
    return reader


def train():
    return _reader(65536, 1)


def test():
    return _reader(1024, 2)
