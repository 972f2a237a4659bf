/* The Python runtime's functions used outside its folder's files (tests included). */
#ifndef PP_PYTHON_H
#define PP_PYTHON_H

/* Python rules, first match wins: gunicorn process title, gunicorn, uvicorn, uwsgi (-w,
 * --wsgi-file, --ini/--ini-paste/--ini-paste-logged or one bare *.ini read for
 * `[uwsgi] module`), celery (-A/--app, else -Q/--queues), `python -m pyspark.daemon`, plain
 * python (`-m X`, or argv[1] ending in .py). */
char *pp_appid_python(char *const *argv, int argc, const char *cwd, const char *root);

#endif
